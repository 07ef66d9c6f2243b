package traefikplugin

import (
	"strconv"
	"sync"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// A decimals table holds at index i the decimal form of the number i.
// With it ServeHTTP writes X-RateLimit-Remaining, X-RateLimit-Reset and
// Retry-After without formatting or even checking a bound, which under
// yaegi saves several microseconds a request. Tables come in two sizes,
// built once when a middleware first needs them and never changed
// afterwards.
var tableSizes = [...]int{4096, 65536}

var (
	tablesMu sync.Mutex
	tables   = make(map[int][]string)
)

// decimalsFor returns the smallest table that holds every value the
// headers of rule can take, or nil when none does. Remaining is at most
// the limit; ResetAfter, and the RetryAfter of a denial, are at most the
// window plus one sub-window (the leaving one).
func decimalsFor(rule ratelimit.Rule) []string {
	need := rule.Limit
	if secs := int64((rule.Window + rule.SubWindow + time.Second - 1) / time.Second); secs > need {
		need = secs
	}
	for _, n := range tableSizes {
		if need < int64(n) {
			return decimalTable(n)
		}
	}
	return nil
}

func decimalTable(n int) []string {
	tablesMu.Lock()
	defer tablesMu.Unlock()
	t := tables[n]
	if t == nil {
		t = make([]string, n)
		for i := 0; i < n; i++ {
			t[i] = strconv.Itoa(i)
		}
		tables[n] = t
	}
	return t
}
