package httplimit

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// HeaderMode selects which rate-limit headers responses carry.
type HeaderMode uint8

const (
	// HeadersLegacy writes X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset. It is the default.
	HeadersLegacy HeaderMode = iota
	// HeadersIETF writes the fields of draft-ietf-httpapi-ratelimit-headers-11:
	// RateLimit-Policy: "<name>";q=N;w=W and RateLimit: "<name>";r=R;t=T.
	HeadersIETF
	// HeadersBoth writes the legacy and the IETF headers.
	HeadersBoth
	// HeadersNone writes no rate-limit header (Retry-After is still sent
	// on a rejection).
	HeadersNone
)

var headerModeNames = [...]string{HeadersLegacy: "legacy", HeadersIETF: "ietf", HeadersBoth: "both", HeadersNone: "none"}

// String returns the configuration name of m.
func (m HeaderMode) String() string {
	if int(m) < len(headerModeNames) {
		return headerModeNames[m]
	}
	return "headers(" + itoa(int64(m)) + ")"
}

// ParseHeaderMode returns the mode named s, case-insensitively; the empty
// string is HeadersLegacy.
func ParseHeaderMode(s string) (HeaderMode, error) {
	if s == "" {
		return HeadersLegacy, nil
	}
	for i, name := range headerModeNames {
		if strings.EqualFold(s, name) {
			return HeaderMode(i), nil
		}
	}
	return 0, errors.New("unknown headers mode " + quote(s) + " (want legacy, ietf, both or none)")
}

// Header names in the canonical form http.Header uses, and the fixed
// values of a rejection. The per-request path assigns to the map without
// canonicalizing.
const (
	HeaderLimit         = "X-Ratelimit-Limit"
	HeaderRemaining     = "X-Ratelimit-Remaining"
	HeaderReset         = "X-Ratelimit-Reset"
	HeaderPolicy        = "Ratelimit-Policy"
	HeaderRateLimit     = "Ratelimit"
	HeaderRetryAfter    = "Retry-After"
	HeaderContentType   = "Content-Type"
	HeaderContentLength = "Content-Length"
	HeaderNoSniff       = "X-Content-Type-Options"

	// ContentTypeText and NoSniff are the Content-Type and
	// X-Content-Type-Options of a rejection's plain-text body.
	ContentTypeText = "text/plain; charset=utf-8"
	NoSniff         = "nosniff"
)

// Policy holds the header values of one rule that never change, so that
// the per-request path only formats Remaining and the reset delay. It is
// safe for concurrent use.
//
// Every response gets value slices of its own, the values of one call in
// one allocation: handlers further down may rewrite a value in place
// (Caddy's header replacements do), which on a slice shared between
// responses would change, and race on, the headers of every other one.
type Policy struct {
	mode       HeaderMode
	limit      int64
	limitStr   string // X-RateLimit-Limit
	policyStr  string // RateLimit-Policy
	quoted     string // `"<name>"`
	window     string // `;w=W`
	ratePrefix string // `"<name>";r=`
	legacy     bool
	ietf       bool
}

// NewPolicy returns the headers of the rule named name that admits limit
// requests per window. The name is written as a structured-field string:
// characters outside printable ASCII become '_'.
func NewPolicy(name string, window time.Duration, limit int64, mode HeaderMode) *Policy {
	quoted := sfString(name)
	return &Policy{
		mode:       mode,
		limit:      limit,
		limitStr:   itoa(limit),
		policyStr:  quoted + ";q=" + itoa(limit) + ";w=" + itoa(CeilSeconds(window)),
		quoted:     quoted,
		window:     ";w=" + itoa(CeilSeconds(window)),
		ratePrefix: quoted + ";r=",
		legacy:     mode == HeadersLegacy || mode == HeadersBoth,
		ietf:       mode == HeadersIETF || mode == HeadersBoth,
	}
}

// PolicyValue returns the RateLimit-Policy value of the rule's own limit.
func (p *Policy) PolicyValue() string { return p.policyStr }

// RatePrefix returns the start of the RateLimit value, `"<name>";r=`.
func (p *Policy) RatePrefix() string { return p.ratePrefix }

// Mode returns the policy's header mode.
func (p *Policy) Mode() HeaderMode { return p.mode }

// WriteHeaders writes the rate-limit headers of d into h per p's mode; it
// does nothing for HeadersNone. X-RateLimit-Reset is d.ResetAfter in
// seconds, rounded up; so is the IETF t= of an allowed request, and that
// of a denied one is its Retry-After (see writeIETF).
//
// Each mode's work is a function of its own, and the values come from a
// table rather than from nested calls (see the package documentation).
//
// A function, not a method: interpreted, the method costs more on every
// request (see the package documentation).
func WriteHeaders(p *Policy, h http.Header, d ratelimit.Decision) {
	if p.legacy {
		writeLegacy(p, h, d)
	}
	if p.ietf {
		writeIETF(p, h, d)
	}
}

func writeLegacy(p *Policy, h http.Header, d ratelimit.Decision) {
	limit := p.limitStr
	if d.Limit != p.limit {
		limit = itoa(d.Limit)
	}
	// Three values, one allocation; each slice is capped at its own
	// element so that an append elsewhere cannot reach the next one.
	v := []string{limit, itoa(d.Remaining), itoa(CeilSeconds(d.ResetAfter))}
	h[HeaderLimit] = v[0:1:1]
	h[HeaderRemaining] = v[1:2:2]
	h[HeaderReset] = v[2:3:3]
}

// writeIETF writes RateLimit-Policy and RateLimit. The draft's t is the
// time within which the client can use no more than r, and a Retry-After
// on the same response "SHOULD NOT reference a point in time earlier than
// the end of the effective window" (draft-ietf-httpapi-ratelimit-headers-11,
// section 6). So for a denied request t is the Retry-After delay, as
// Retry-After has it (RetrySeconds: at least 1s); otherwise it is the
// delay until the window is empty, which never overstates the rate r/t.
// q is the limit that applied to the request: a key's override or tier.
func writeIETF(p *Policy, h http.Header, d ratelimit.Decision) {
	policy := p.policyStr
	if d.Limit != p.limit && d.Limit > 0 {
		policy = p.quoted + ";q=" + itoa(d.Limit) + p.window
	}
	t := CeilSeconds(d.ResetAfter)
	if !d.Allowed {
		t = RetrySeconds(d.RetryAfter)
	}
	v := []string{policy, p.ratePrefix + itoa(d.Remaining) + ";t=" + itoa(t)}
	h[HeaderPolicy] = v[0:1:1]
	h[HeaderRateLimit] = v[1:2:2]
}

// SetRetryAfter writes Retry-After for a denied d: d.RetryAfter in seconds,
// rounded up, at least 1.
func SetRetryAfter(h http.Header, d ratelimit.Decision) {
	h[HeaderRetryAfter] = []string{itoa(RetrySeconds(d.RetryAfter))}
}

// WriteRejection writes a complete rejection of a request denied by d:
// the rate-limit headers, Retry-After, the status and body as plain text.
//
// A function, not a method: interpreted, the method costs more on every
// denial (see the package documentation).
func WriteRejection(p *Policy, w http.ResponseWriter, d ratelimit.Decision, status int, body string) {
	h := w.Header()
	WriteHeaders(p, h, d)
	// Four values, one allocation, none shared with another response.
	v := []string{itoa(RetrySeconds(d.RetryAfter)), itoa(int64(len(body))), ContentTypeText, NoSniff}
	h[HeaderRetryAfter] = v[0:1:1]
	h[HeaderContentLength] = v[1:2:2]
	h[HeaderContentType] = v[2:3:3]
	h[HeaderNoSniff] = v[3:4:4]
	w.WriteHeader(status)
	if body != "" {
		io.WriteString(w, body)
	}
}

// CeilSeconds rounds a delay up to whole seconds (0 for d <= 0).
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// sfString returns s as an RFC 8941 string: in double quotes, with '"' and
// '\' escaped and anything outside printable ASCII replaced by '_'.
func sfString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('_')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// quote returns s as a Go string literal for error messages, cut to a
// readable length.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
