package httplimit

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/headertest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

func TestParseHeaderMode(t *testing.T) {
	tests := []struct {
		in      string
		want    HeaderMode
		wantErr bool
	}{
		{"", HeadersLegacy, false},
		{"legacy", HeadersLegacy, false},
		{"IETF", HeadersIETF, false},
		{"Both", HeadersBoth, false},
		{"none", HeadersNone, false},
		{"draft", 0, true},
		{" legacy", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseHeaderMode(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseHeaderMode(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), tt.in) {
			t.Errorf("error %q does not name the value %q", err, tt.in)
		}
	}
	for _, m := range []HeaderMode{HeadersLegacy, HeadersIETF, HeadersBoth, HeadersNone} {
		if got, err := ParseHeaderMode(m.String()); err != nil || got != m {
			t.Errorf("round trip of %v: %v, %v", m, got, err)
		}
	}
}

func TestCeilSeconds(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want int64
	}{
		{-time.Second, 0},
		{0, 0},
		{1, 1},
		{999 * time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + 1, 2},
		{time.Minute, 60},
	}
	for _, tt := range tests {
		if got := CeilSeconds(tt.in); got != tt.want {
			t.Errorf("CeilSeconds(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestWriteHeaders(t *testing.T) {
	d := ratelimit.Decision{Allowed: true, Limit: 100, Remaining: 42, ResetAfter: 59500 * time.Millisecond}
	tests := []struct {
		mode HeaderMode
		d    ratelimit.Decision
		want map[string]string
	}{
		{HeadersLegacy, d, map[string]string{
			"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "42", "X-RateLimit-Reset": "60",
		}},
		{HeadersIETF, d, map[string]string{
			"RateLimit-Policy": `"api";q=100;w=60`, "RateLimit": `"api";r=42;t=60`,
		}},
		{HeadersBoth, d, map[string]string{
			"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "42", "X-RateLimit-Reset": "60",
			"RateLimit-Policy": `"api";q=100;w=60`, "RateLimit": `"api";r=42;t=60`,
		}},
		{HeadersNone, d, map[string]string{}},
		// Values beyond the precomputed table and a limit that is not the policy's.
		{HeadersLegacy, ratelimit.Decision{Limit: 1 << 30, Remaining: 123456, ResetAfter: 100000 * time.Second}, map[string]string{
			"X-RateLimit-Limit": "1073741824", "X-RateLimit-Remaining": "123456", "X-RateLimit-Reset": "100000",
		}},
	}
	for _, tt := range tests {
		p := NewPolicy("api", time.Minute, 100, tt.mode)
		h := http.Header{}
		WriteHeaders(p, h, tt.d)
		if len(h) != len(tt.want) {
			t.Errorf("%v: got %d headers %v, want %v", tt.mode, len(h), h, tt.want)
		}
		for k, v := range tt.want {
			if got := h.Values(k); len(got) != 1 || got[0] != v {
				t.Errorf("%v: %s = %q, want %q", tt.mode, k, got, v)
			}
		}
	}
}

// One response's headers are its own: what a handler does to them never
// shows in another response.
func TestHeadersAreNotShared(t *testing.T) {
	d := ratelimit.Decision{Limit: 100, Remaining: 1, ResetAfter: time.Second, RetryAfter: time.Second}
	respond := func(p *Policy) http.Header {
		rec := httptest.NewRecorder()
		WriteHeaders(p, rec.Header(), d)
		SetRetryAfter(rec.Header(), d)
		WriteRejection(p, rec, d, http.StatusTooManyRequests, "no")
		return rec.Header()
	}
	p := NewPolicy("api", time.Minute, 100, HeadersBoth)
	want := respond(p).Clone()
	for i := 0; i < 2; i++ {
		headertest.Scribble(respond(p))
	}
	got := respond(p)
	if len(got) != len(want) || len(want) != 9 {
		t.Fatalf("got %d headers %v, want %v", len(got), got, want)
	}
	for k, v := range want {
		if g := got[k]; len(g) != 1 || g[0] != v[0] {
			t.Errorf("%s = %q after other responses were changed, want %q", k, g, v)
		}
	}
}

func TestPolicyNameQuoting(t *testing.T) {
	tests := []struct{ name, want string }{
		{"api", `"api";q=5;w=2`},
		{`a"b\c`, `"a\"b\\c";q=5;w=2`},
		{"zone\nä", `"zone___";q=5;w=2`},
		{"", `"";q=5;w=2`},
	}
	for _, tt := range tests {
		h := http.Header{}
		WriteHeaders(NewPolicy(tt.name, 1500*time.Millisecond, 5, HeadersIETF), h, ratelimit.Decision{Limit: 5})
		if got := h.Get("RateLimit-Policy"); got != tt.want {
			t.Errorf("name %q: RateLimit-Policy = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSetRetryAfter(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "1"},
		{time.Millisecond, "1"},
		{time.Second, "1"},
		{1001 * time.Millisecond, "2"},
		{90 * time.Second, "90"},
		{10 * time.Hour, "36000"},
	}
	for _, tt := range tests {
		h := http.Header{}
		SetRetryAfter(h, ratelimit.Decision{RetryAfter: tt.in})
		if got := h.Get("Retry-After"); got != tt.want {
			t.Errorf("RetryAfter %v: Retry-After = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReject(t *testing.T) {
	for _, mode := range []HeaderMode{HeadersLegacy, HeadersNone} {
		p := NewPolicy("api", time.Minute, 20, mode)
		rec := httptest.NewRecorder()
		d := ratelimit.Decision{Limit: 20, RetryAfter: 2500 * time.Millisecond, ResetAfter: time.Minute}
		WriteRejection(p, rec, d, http.StatusTooManyRequests, "Too Many Requests\n")
		res := rec.Result()
		if res.StatusCode != http.StatusTooManyRequests {
			t.Errorf("%v: status %d", mode, res.StatusCode)
		}
		if got := res.Header.Get("Retry-After"); got != "3" {
			t.Errorf("%v: Retry-After %q, want 3", mode, got)
		}
		if got := res.Header.Get("Content-Length"); got != "18" {
			t.Errorf("%v: Content-Length %q, want 18", mode, got)
		}
		if got := rec.Body.String(); got != "Too Many Requests\n" {
			t.Errorf("%v: body %q", mode, got)
		}
		_, hasLimit := res.Header["X-Ratelimit-Limit"]
		if hasLimit != (mode == HeadersLegacy) {
			t.Errorf("%v: X-RateLimit-Limit present = %v", mode, hasLimit)
		}
		if got := res.Header.Get("X-RateLimit-Remaining"); mode == HeadersLegacy && got != "0" {
			t.Errorf("%v: X-RateLimit-Remaining %q, want 0", mode, got)
		}
	}
}

// The IETF fields of a denied request, as Traefik writes them
// (WriteRejection) and as Caddy does (WriteHeaders, then SetRetryAfter
// unless in dry run). The draft (draft-ietf-httpapi-ratelimit-headers-11,
// section 6): "the Retry-After field value SHOULD NOT reference a point in
// time earlier than the end of the effective window", t. So t is the
// Retry-After delay (which is also when the r=0 it goes with stops being
// true), not the delay until the window is empty, which X-RateLimit-Reset
// keeps.
func TestIETFDenial(t *testing.T) {
	tests := []struct {
		name       string
		d          ratelimit.Decision
		rateLimit  string
		retryAfter string
	}{
		{"sliding", ratelimit.Decision{Limit: 100, RetryAfter: 4200 * time.Millisecond, ResetAfter: 59500 * time.Millisecond},
			`"api";r=0;t=5`, "5"},
		{"sub-second", ratelimit.Decision{Limit: 100, RetryAfter: 300 * time.Millisecond, ResetAfter: 30 * time.Second},
			`"api";r=0;t=1`, "1"},
		{"no delay", ratelimit.Decision{Limit: 100, ResetAfter: 30 * time.Second},
			`"api";r=0;t=1`, "1"},
		// A request costing more than what remains.
		{"cost", ratelimit.Decision{Limit: 100, Remaining: 3, RetryAfter: 2 * time.Second, ResetAfter: 40 * time.Second},
			`"api";r=3;t=2`, "2"},
		{"whole window", ratelimit.Decision{Limit: 100, RetryAfter: time.Minute, ResetAfter: time.Minute},
			`"api";r=0;t=60`, "60"},
	}
	for _, tt := range tests {
		legacyReset := strconv.FormatInt(CeilSeconds(tt.d.ResetAfter), 10)
		want := map[string]string{
			"RateLimit-Policy":      `"api";q=100;w=60`,
			"RateLimit":             tt.rateLimit,
			"X-RateLimit-Limit":     "100",
			"X-RateLimit-Remaining": strconv.FormatInt(tt.d.Remaining, 10),
			"X-RateLimit-Reset":     legacyReset,
			"Retry-After":           tt.retryAfter,
		}
		check := func(host string, h http.Header, keys ...string) {
			t.Helper()
			for _, k := range keys {
				if got := h.Values(k); len(got) != 1 || got[0] != want[k] {
					t.Errorf("%s, %s: %s = %q, want %q", tt.name, host, k, got, want[k])
				}
			}
		}
		p := NewPolicy("api", time.Minute, 100, HeadersBoth)
		rec := httptest.NewRecorder()
		WriteRejection(p, rec, tt.d, http.StatusTooManyRequests, "no")
		check("Reject", rec.Header(), "RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After")
		h := http.Header{}
		WriteHeaders(p, h, tt.d)
		check("dry run", h, "RateLimit-Policy", "RateLimit", "X-RateLimit-Reset")
		SetRetryAfter(h, tt.d)
		check("SetRetryAfter", h, "RateLimit", "Retry-After")
	}
}

func TestRejectEmptyBody(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteRejection(NewPolicy("api", time.Minute, 1, HeadersLegacy), rec, ratelimit.Decision{Limit: 1}, 503, "")
	if rec.Code != 503 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != "0" {
		t.Errorf("got %d, body %q, Content-Length %q", rec.Code, rec.Body, rec.Header().Get("Content-Length"))
	}
}

func BenchmarkWriteHeaders(b *testing.B) {
	for _, mode := range []HeaderMode{HeadersLegacy, HeadersIETF, HeadersBoth} {
		b.Run(mode.String(), func(b *testing.B) {
			p := NewPolicy("api", time.Minute, 100, mode)
			h := http.Header{}
			d := ratelimit.Decision{Allowed: true, Limit: 100, Remaining: 42, ResetAfter: 6 * time.Second}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				WriteHeaders(p, h, d)
			}
		})
	}
}

func BenchmarkReject(b *testing.B) {
	p := NewPolicy("api", time.Minute, 100, HeadersLegacy)
	d := ratelimit.Decision{Limit: 100, RetryAfter: 3 * time.Second, ResetAfter: 6 * time.Second}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		WriteRejection(p, w, d, http.StatusTooManyRequests, "Too Many Requests\n")
	}
}

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// TestHeadersShowAppliedLimit: a request decided under a key's own limit
// (an override or a tier) shows that limit in both header sets.
func TestHeadersShowAppliedLimit(t *testing.T) {
	p := NewPolicy("api", time.Minute, 10, HeadersBoth)
	h := http.Header{}
	WriteHeaders(p, h, ratelimit.Decision{Allowed: true, Limit: 600, Remaining: 599, ResetAfter: time.Minute})
	if got := h.Get("X-RateLimit-Limit"); got != "600" {
		t.Errorf("X-RateLimit-Limit %q, want 600", got)
	}
	if got := h.Get("RateLimit-Policy"); got != `"api";q=600;w=60` {
		t.Errorf("RateLimit-Policy %q", got)
	}
	h = http.Header{}
	WriteHeaders(p, h, ratelimit.Decision{Allowed: true, Limit: 10, Remaining: 9, ResetAfter: time.Minute})
	if got := h.Get("RateLimit-Policy"); got != `"api";q=10;w=60` {
		t.Errorf("RateLimit-Policy %q under the rule's limit", got)
	}
}

// TestHeadersPastTheWindow: Retry-After and X-RateLimit-Reset can exceed
// the window by one sub-window. A key takes its limit at once, at the
// start of a sub-window, then is rejected: with sliding and strict that
// sub-window counts until all of it has left the window, W+T later (the
// most there can be: TestDecisionBoundsUnderClockSteps in ratelimit);
// fixed and log stay within W. -v prints each case's headers, the figures
// of docs/headers.md.
func TestHeadersPastTheWindow(t *testing.T) {
	at := time.Unix(1699999200, 0).UnixNano() // a multiple of 6 s, 90 s and 15 m
	tests := []struct {
		rule         ratelimit.Rule
		retry, reset string // Retry-After and X-RateLimit-Reset of the rejection
	}{
		{ratelimit.Rule{Window: time.Minute, Limit: 10}, "61", "66"},
		{ratelimit.Rule{Window: time.Minute, Limit: 10, Algorithm: ratelimit.Strict}, "66", "66"},
		{ratelimit.Rule{Window: time.Minute, Limit: 10, Algorithm: ratelimit.Fixed}, "60", "60"},
		{ratelimit.Rule{Window: time.Minute, Limit: 10, Algorithm: ratelimit.Log}, "60", "60"},
		{ratelimit.Rule{Window: 15 * time.Minute, Limit: 5}, "918", "990"},
	}
	for _, tt := range tests {
		z, err := ratelimit.NewZone("api", tt.rule, ratelimit.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		r := z.Rule()
		for i := int64(0); i < r.Limit; i++ {
			if d := ratelimit.TakeAt(z, "k", time.Unix(0, at)); !d.Allowed {
				t.Fatalf("%v: request %d denied", r, i+1)
			}
		}
		d := ratelimit.TakeAt(z, "k", time.Unix(0, at))
		if d.Allowed {
			t.Fatalf("%v: request %d allowed", r, r.Limit+1)
		}
		w := httptest.NewRecorder()
		WriteRejection(NewPolicy("api", r.Window, r.Limit, HeadersLegacy), w, d, http.StatusTooManyRequests, "")
		retry, reset := w.Header().Get("Retry-After"), w.Header().Get("X-RateLimit-Reset")
		split := ""
		if r.Algorithm == ratelimit.Sliding || r.Algorithm == ratelimit.Strict {
			split = fmt.Sprintf(" (sub-windows of %v)", r.SubWindow)
		}
		t.Logf("%v, window %v%s, limit %d taken at a sub-window's start, then one more: Retry-After %s, X-RateLimit-Reset %s",
			r.Algorithm, r.Window, split, r.Limit, retry, reset)
		if retry != tt.retry || reset != tt.reset {
			t.Errorf("%v: Retry-After %s, X-RateLimit-Reset %s; want %s and %s", r, retry, reset, tt.retry, tt.reset)
		}
	}
}
