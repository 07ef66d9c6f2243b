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

// The header modes allowedHeaders tells apart, as package constants (see
// Performance under yaegi).
const (
	headersLegacy = httplimit.HeadersLegacy
	headersIETF   = httplimit.HeadersIETF
	headersBoth   = httplimit.HeadersBoth
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
// its mode's values only, and each value is a literal of its own, as in
// ServeHTTP (see Performance under yaegi).
func allowedHeaders(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	switch m.headerMode {
	case headersLegacy:
		legacyValues(m, w, d)
	case headersIETF:
		ietfValues(m, w, d)
	case headersBoth:
		bothValues(m, w, d)
	}
}

// legacyValues writes the legacy headers of an allowed d: the values the
// table holds from it, the others formatted.
func legacyValues(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	h := w.Header()
	h[headerLimit] = []string{m.limitStr}
	h[headerRemaining] = []string{decimal(m.decimals, d.Remaining)}
	h[headerReset] = []string{decimal(m.decimals, int64((d.ResetAfter+(second-1))/second))}
}

// ietfValues writes RateLimit-Policy and RateLimit of an allowed d (see
// httplimit.WriteHeaders).
func ietfValues(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	h := w.Header()
	h[headerPolicy] = []string{m.policyStr}
	h[headerRateLimit] = []string{m.ratePrefix + decimal(m.decimals, d.Remaining) + suffixT(int64((d.ResetAfter+(second-1))/second))}
}

// bothValues writes the legacy and the IETF headers of an allowed d.
func bothValues(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	rem := decimal(m.decimals, d.Remaining)
	t := int64((d.ResetAfter + (second - 1)) / second)
	h := w.Header()
	h[headerLimit] = []string{m.limitStr}
	h[headerRemaining] = []string{rem}
	h[headerReset] = []string{decimal(m.decimals, t)}
	h[headerPolicy] = []string{m.policyStr}
	h[headerRateLimit] = []string{m.ratePrefix + rem + suffixT(t)}
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
