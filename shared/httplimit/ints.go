package httplimit

import (
	"strconv"
	"sync"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// A decimals table holds at index i the decimal form of the number i.
// The counts and delays written on every response then need no
// formatting and no allocation. The Traefik plugin's inline path indexes
// one without even checking a bound, which saves it several interpreted
// microseconds a request. Tables come in two sizes, built once when first
// needed and never changed afterwards; the smaller one is built at init,
// for itoa.
var tableSizes = [...]int{4096, 65536}

var (
	tablesMu sync.Mutex
	tables   = make(map[int][]string)
)

// smallInts is the smaller table.
var smallInts = decimalTable(tableSizes[0])

// DecimalsFor returns the smallest decimals table that holds every value
// the headers of rule can take (see Decimals), or nil when none does:
// Remaining is at most the limit; ResetAfter, and the RetryAfter of a
// denial, are at most the window plus one sub-window (the leaving one),
// and so are their seconds rounded up (CeilSeconds, RetrySeconds).
func DecimalsFor(rule ratelimit.Rule) []string {
	need := rule.Limit
	if secs := CeilSeconds(rule.Window + rule.SubWindow); secs > need {
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

// Decimals returns the smaller decimals table, for callers that format
// the values past it.
func Decimals() []string { return smallInts }

// itoa returns the decimal form of n, from the table when it is small.
func itoa(n int64) string {
	if n >= 0 && n < int64(len(smallInts)) {
		return smallInts[n]
	}
	return strconv.FormatInt(n, 10)
}

// RetrySeconds returns a denial's RetryAfter as Retry-After writes it: in
// seconds, rounded up, at least 1 (a client told 0 would retry at once).
func RetrySeconds(retryAfter time.Duration) int64 {
	if retryAfter <= time.Second {
		return 1
	}
	return CeilSeconds(retryAfter)
}
