package traefikplugin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

const headerPolicy = httplimit.HeaderPolicy
const headerRateLimit = httplimit.HeaderRateLimit

// tSuffixes holds ";t=<n>" for the IETF RateLimit value of every n below
// its length, shared by every middleware (see setFast).
var tSuffixes = func() []string {
	t := make([]string, 4096)
	for i := range t {
		t[i] = ";t=" + strconv.Itoa(i)
	}
	return t
}()

// setFast sets the header tables of m, whose settings are s, and lets
// ServeHTTP serve m when it needs no more than the in-memory zone: any
// source, header mode, limit, window and dry run; countStatus, overrides
// and stores stay in serveOther, which writes the headers of a decision
// under the rule's limit from the same tables (allowedHeaders).
func setFast(m *Middleware, s settings) {
	m.tabled = s.mode == httplimit.HeadersLegacy && m.decimals != nil
	if m.decimals == nil {
		m.decimals = httplimit.Decimals()
	}
	m.headerMode = s.mode
	m.policyStr = m.policy.PolicyValue()
	m.ratePrefix = m.policy.RatePrefix()
	if m.store != nil || m.countStatus != nil || m.overrides != nil {
		return
	}
	m.slow = false
	if src := s.source; src != nil {
		m.keyKind = src.kind
		if src.kind == sourceIP && src.ip.depth > 0 {
			m.depth = src.ip.depth
		}
		if src.kind == sourceIP && src.ip.excluded != nil {
			m.excluded4 = excludedIPv4(src.ip)
		}
	}
}

// decidedFast carries out the decision d on a request of ServeHTTP whose
// headers are not legacy from a table. A denial, rare on a busy limit,
// goes to deny.
func decidedFast(m *Middleware, w http.ResponseWriter, r *http.Request, key string, d ratelimit.Decision) {
	if !d.Allowed {
		deny(m, w, r, key, d)
		return
	}
	allowedHeaders(m, w, d)
	m.next.ServeHTTP(w, r)
}

// allowedHeaders writes the headers of an allowed d under the rule's
// limit, with one function per mode: under yaegi a function's frame holds
// the temporaries of every branch, so the modes' values inline here would
// cost every request the slots of all of them.
func allowedHeaders(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	switch m.headerMode {
	case httplimit.HeadersLegacy:
		legacyWide(m, w, d)
	case httplimit.HeadersIETF:
		ietfValues(m, w, d)
	case httplimit.HeadersBoth:
		bothValues(m, w, d)
	}
}

// legacyWide writes the legacy headers of an allowed d, for a limit or
// window past the tables: the values the table holds from it, the others
// formatted.
func legacyWide(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	v := []string{m.limitStr, decimal(m.decimals, d.Remaining), decimal(m.decimals, int64((d.ResetAfter+time.Second-1)/time.Second))}
	h := w.Header()
	h[headerLimit] = v[0:1:1]
	h[headerRemaining] = v[1:2:2]
	h[headerReset] = v[2:3:3]
}

// ietfValues writes RateLimit-Policy and RateLimit of an allowed d (see
// httplimit.WriteHeaders).
func ietfValues(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	v := []string{m.policyStr, m.ratePrefix + decimal(m.decimals, d.Remaining) + suffixT(int64((d.ResetAfter+time.Second-1)/time.Second))}
	h := w.Header()
	h[headerPolicy] = v[0:1:1]
	h[headerRateLimit] = v[1:2:2]
}

// bothValues writes the legacy and the IETF headers of an allowed d.
func bothValues(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	rem := decimal(m.decimals, d.Remaining)
	t := int64((d.ResetAfter + time.Second - 1) / time.Second)
	v := []string{m.limitStr, rem, decimal(m.decimals, t), m.policyStr, m.ratePrefix + rem + suffixT(t)}
	h := w.Header()
	h[headerLimit] = v[0:1:1]
	h[headerRemaining] = v[1:2:2]
	h[headerReset] = v[2:3:3]
	h[headerPolicy] = v[3:4:4]
	h[headerRateLimit] = v[4:5:5]
}

// decimal returns t[n], or n formatted when t is too short for it.
func decimal(t []string, n int64) string {
	if uint64(n) < uint64(len(t)) {
		return t[n]
	}
	return strconv.FormatInt(n, 10)
}

// suffixT returns ";t=<n>", from tSuffixes when it holds it.
func suffixT(n int64) string {
	if uint64(n) < uint64(len(tSuffixes)) {
		return tSuffixes[n]
	}
	return ";t=" + strconv.FormatInt(n, 10)
}
