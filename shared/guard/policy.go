package guard

import (
	"fmt"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// FailurePolicy says how requests are decided while the remote store fails
// or its circuit breaker is open.
type FailurePolicy uint8

const (
	// FailAllow admits every request (fail open). It is the default: an
	// outage of the limiter's store must not become an outage of the site.
	FailAllow FailurePolicy = iota
	// FailDeny rejects every request (fail closed).
	FailDeny
	// FailLocal decides with this instance's in-memory zones, so each
	// instance enforces the limit on its own share of the traffic.
	FailLocal
)

var policyNames = [...]string{FailAllow: "allow", FailDeny: "deny", FailLocal: "local"}

// String returns the configuration name of p.
func (p FailurePolicy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("policy(%d)", int(p))
}

// ParseFailurePolicy returns the policy named s; the empty string is
// FailAllow.
func ParseFailurePolicy(s string) (FailurePolicy, error) {
	if s == "" {
		return FailAllow, nil
	}
	for i, name := range policyNames {
		if strings.EqualFold(s, name) {
			return FailurePolicy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown store failure policy %q (want allow, deny or local)", s)
}

// DenyRetryAfter is the RetryAfter of a request denied by FailDeny: about
// how long the breaker's probe takes to notice a recovered store.
const DenyRetryAfter = time.Second

// decide answers items by the policy, without the remote store.
func (p FailurePolicy) decide(now time.Time, items []ratelimit.Item, out []ratelimit.Decision) bool {
	switch p {
	case FailLocal:
		return ratelimit.TakeAll(now, items, out)
	case FailDeny:
		for i := range items {
			out[i] = ratelimit.Decision{Limit: ratelimit.LimitOf(&items[i]), RetryAfter: DenyRetryAfter, ResetAfter: DenyRetryAfter}
		}
		return false
	}
	for i := range items {
		n := ratelimit.LimitOf(&items[i])
		out[i] = ratelimit.Decision{Allowed: true, Limit: n, Remaining: n - items[i].Zone.Rule().Cost}
	}
	return true
}
