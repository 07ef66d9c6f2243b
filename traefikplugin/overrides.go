package traefikplugin

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// overrides parses the overrides list against the normalized rule r:
// entries "<key or CIDR>=<limit>|unlimited", where an IP address or a
// CIDR matches the client address (see overriddenKey). A label hands the
// list over as one comma-separated string or already split: both are
// accepted. The last '=' splits an entry, so that a key may hold '='
// (base64 padding).
func overrides(list []string, r ratelimit.Rule) (*ratelimit.Overrides, error) {
	var ovs []ratelimit.Override
	for _, v := range list {
		for _, e := range strings.Split(v, ",") {
			e = strings.TrimSpace(e)
			i := strings.LastIndexByte(e, '=')
			if i <= 0 {
				return nil, fieldError("overrides", "entry "+quoteValue(e)+" must be <key or CIDR>=<limit> or <key or CIDR>=unlimited")
			}
			n, err := ratelimit.ParseOverrideLimit(e[i+1:])
			if err != nil {
				return nil, fieldError("overrides", "entry "+quoteValue(e)+": "+err.Error())
			}
			ovs = append(ovs, ratelimit.Override{Key: e[:i], Limit: n})
		}
	}
	o, err := ratelimit.NewOverrides(r, ovs)
	if err != nil {
		return nil, fieldError("overrides", err.Error())
	}
	return o, nil
}

// serveOverridden serves a request of a middleware with overrides: an
// exempt request goes straight on, without headers; another gets its own
// limit, or the rule's.
func serveOverridden(m *Middleware, w http.ResponseWriter, r *http.Request) {
	key, client := overriddenKey(m, r)
	limit, _ := m.overrides.Match(key, client)
	if limit == ratelimit.Unlimited {
		m.next.ServeHTTP(w, r)
		return
	}
	if m.countStatus != nil {
		serveCountedLimit(m, w, r, key, limit)
		return
	}
	var d ratelimit.Decision
	if m.store == nil {
		if limit > 0 {
			d = ratelimit.TakeLimitAt(m.zone, key, time.Now(), limit)
		} else {
			d = ratelimit.TakeAt(m.zone, key, time.Now())
		}
	} else {
		d = takeLimitFromStore(r.Context(), m, key, limit)
	}
	decided(m, w, r, key, d)
}

// takeLimitFromStore is takeFromStore for a key with its own limit.
func takeLimitFromStore(ctx context.Context, m *Middleware, key string, limit int64) ratelimit.Decision {
	if m.lease != nil {
		return lease.Take(ctx, m.lease, key, limit, time.Now())
	}
	items := []ratelimit.Item{{Zone: m.zone, Key: key, Limit: limit}}
	out := make([]ratelimit.Decision, 1)
	if _, err := m.store.Take(ctx, time.Now(), items, out); err != nil {
		return failOpen(m, limit)
	}
	return out[0]
}

// failOpen is the decision of a request whose store failed (see
// takeFromStore) under limit (0: the rule's).
func failOpen(m *Middleware, limit int64) ratelimit.Decision {
	r := m.zone.Rule()
	if limit <= 0 {
		limit = r.Limit
	}
	return ratelimit.Decision{Allowed: true, Limit: limit, Remaining: limit - r.Cost}
}
