package traefikplugin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// The names of the headers the paths write, as package constants (see
// Performance under yaegi).
const (
	headerLimit         = httplimit.HeaderLimit
	headerRemaining     = httplimit.HeaderRemaining
	headerReset         = httplimit.HeaderReset
	headerRetryAfter    = httplimit.HeaderRetryAfter
	headerContentType   = httplimit.HeaderContentType
	headerNoSniff       = httplimit.HeaderNoSniff
	headerContentLength = httplimit.HeaderContentLength
	contentTypeText     = httplimit.ContentTypeText
	noSniff             = httplimit.NoSniff
	headerPolicy        = httplimit.HeaderPolicy
	headerRateLimit     = httplimit.HeaderRateLimit
)

// second is time.Second as a package constant, for the paths' rounding
// of ResetAfter to whole seconds (see Performance under yaegi). They add
// (second - 1), a constant, where ResetAfter + second - 1 would cost two
// sums.
const second = time.Second

// tSuffixes holds ";t=<n>" for the IETF RateLimit value of every n below
// its length, shared by every middleware (see suffixT).
var tSuffixes = func() []string {
	t := make([]string, 4096)
	for i := range t {
		t[i] = ";t=" + strconv.Itoa(i)
	}
	return t
}()

// allowedHeaders writes the headers of an allowed d under the rule's
// limit. Each mode has a function of its own, so that a request pays for
// its mode's values only (see Performance under yaegi).
func allowedHeaders(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	switch m.headerMode {
	case httplimit.HeadersLegacy:
		legacyValues(m, w, d)
	case httplimit.HeadersIETF:
		ietfValues(m, w, d)
	case httplimit.HeadersBoth:
		bothValues(m, w, d)
	}
}

// legacyValues writes the legacy headers of an allowed d: the values the
// table holds from it, the others formatted.
func legacyValues(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	v := []string{m.limitStr, decimal(m.decimals, d.Remaining), decimal(m.decimals, int64((d.ResetAfter+(second-1))/second))}
	h := w.Header()
	h[headerLimit] = v[0:1:1]
	h[headerRemaining] = v[1:2:2]
	h[headerReset] = v[2:3:3]
}

// ietfValues writes RateLimit-Policy and RateLimit of an allowed d (see
// httplimit.WriteHeaders).
func ietfValues(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	v := []string{m.policyStr, m.ratePrefix + decimal(m.decimals, d.Remaining) + suffixT(int64((d.ResetAfter+(second-1))/second))}
	h := w.Header()
	h[headerPolicy] = v[0:1:1]
	h[headerRateLimit] = v[1:2:2]
}

// bothValues writes the legacy and the IETF headers of an allowed d.
func bothValues(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	rem := decimal(m.decimals, d.Remaining)
	t := int64((d.ResetAfter + (second - 1)) / second)
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
