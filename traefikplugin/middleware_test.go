package traefikplugin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/headertest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// forget removes a middleware's zone from the registry, so that tests do
// not share counts.
func forget(name string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if r := registry[name]; r != nil {
		r.zone.Close()
		if r.saver != nil {
			go r.saver.Close(false)
		}
		delete(registry, name)
	}
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
})

func newMiddleware(t *testing.T, c *Config, name string) http.Handler {
	t.Helper()
	forget(name)
	t.Cleanup(func() { forget(name) })
	h, err := newChecked(context.Background(), okHandler, c, name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func serve(h http.Handler, remote string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/api", nil)
	r.RemoteAddr = remote
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// The seed's loop: limit 20 per minute, 22 requests -> 20 x 200, then 429
// with Retry-After and the headers.
func TestLimitThenReject(t *testing.T) {
	h := newMiddleware(t, validConfig(), "api@file")
	for i := 1; i <= 22; i++ {
		w := serve(h, "203.0.113.7:4711", nil)
		if i <= 20 {
			if w.Code != 200 {
				t.Fatalf("request %d: status %d, want 200", i, w.Code)
			}
			if got, want := w.Header().Get("X-RateLimit-Remaining"), strconv.Itoa(20-i); got != want {
				t.Errorf("request %d: X-RateLimit-Remaining %q, want %q", i, got, want)
			}
			continue
		}
		if w.Code != 429 {
			t.Fatalf("request %d: status %d, want 429", i, w.Code)
		}
		// At most the window plus a sub-window: requests that straddle a
		// sub-window boundary stay counted until the later one leaves.
		ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
		if err != nil || ra < 1 || ra > 66 {
			t.Errorf("request %d: Retry-After %q, want 1..66", i, w.Header().Get("Retry-After"))
		}
		if w.Header().Get("X-RateLimit-Limit") != "20" || w.Header().Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("request %d: headers %v", i, w.Header())
		}
		if w.Body.String() != "Too Many Requests" {
			t.Errorf("request %d: body %q", i, w.Body)
		}
		if w.Header().Get("Content-Length") != "17" || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" ||
			w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("request %d: content headers %v", i, w.Header())
		}
	}
	// Another client has its own count.
	if w := serve(h, "203.0.113.8:4711", nil); w.Code != 200 {
		t.Errorf("other client: status %d", w.Code)
	}
}

func TestStatusMessageAndHeaders(t *testing.T) {
	c := validConfig()
	c.Limit = 1
	c.StatusCode = 503
	c.Message = "slow down"
	c.Headers = "ietf"
	h := newMiddleware(t, c, "custom@file")
	if w := serve(h, "203.0.113.7:1", nil); w.Code != 200 || w.Header().Get("RateLimit-Policy") != `"custom@file";q=1;w=60` {
		t.Fatalf("first request: %d %v", w.Code, w.Header())
	}
	w := serve(h, "203.0.113.7:1", nil)
	if w.Code != 503 || w.Body.String() != "slow down" || w.Header().Get("Retry-After") == "" {
		t.Errorf("rejection: %d %q %v", w.Code, w.Body, w.Header())
	}
	if w.Header().Get("X-RateLimit-Limit") != "" {
		t.Errorf("ietf mode wrote legacy headers: %v", w.Header())
	}
}

// A rejection's IETF fields, exactly: the RateLimit t is the Retry-After
// delay, as draft-ietf-httpapi-ratelimit-headers-11 asks (section 6), not
// the later moment the sliding window is empty.
func TestIETFRejection(t *testing.T) {
	c := validConfig()
	c.Limit = 3
	c.Headers = "ietf"
	h := newMiddleware(t, c, "ietf@file")
	for i := 1; i <= 3; i++ {
		serve(h, "203.0.113.7:1", nil)
	}
	w := serve(h, "203.0.113.7:1", nil)
	retry := w.Header().Get("Retry-After")
	if w.Code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("fourth request: %d %v", w.Code, w.Header())
	}
	if got := w.Header().Values("RateLimit-Policy"); len(got) != 1 || got[0] != `"ietf@file";q=3;w=60` {
		t.Errorf("RateLimit-Policy %q", got)
	}
	if got, want := w.Header().Values("RateLimit"), `"ietf@file";r=0;t=`+retry; len(got) != 1 || got[0] != want {
		t.Errorf("RateLimit %q, want %q", got, want)
	}
}

func TestDryRunLetsThrough(t *testing.T) {
	var log strings.Builder
	dryRunLog = &log
	defer func() { dryRunLog = debugLog }()
	c := validConfig()
	c.Limit = 2
	c.DryRun = true
	h := newMiddleware(t, c, "dry@file")
	defer func() {
		// Eight denials within a second or two: one line a second.
		lines := strings.Count(log.String(), "\n")
		if lines < 1 || lines > 2 || !strings.Contains(log.String(), `middleware "dry@file" would reject a request`) {
			t.Errorf("dry-run log:\n%s", log.String())
		}
	}()
	for i := 1; i <= 10; i++ {
		w := serve(h, "203.0.113.7:1", nil)
		if w.Code != 200 {
			t.Fatalf("request %d: status %d in dry run", i, w.Code)
		}
		if i > 2 && w.Header().Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("request %d: X-RateLimit-Remaining %q", i, w.Header().Get("X-RateLimit-Remaining"))
		}
	}
}

// The dry-run line names the middleware, and the key only with logKey:
// keys may be API keys or personal data.
func TestDryRunLogKey(t *testing.T) {
	var log strings.Builder
	dryRunLog = &log
	defer func() { dryRunLog = debugLog }()
	tests := []struct {
		logKey bool
		want   string
	}{
		{false, `windowlimit: info: dry run: middleware "nokey@file" would reject a request` + "\n"},
		{true, `windowlimit: info: dry run: middleware "key@file" would reject key "203.0.113.7"` + "\n"},
	}
	for _, tt := range tests {
		log.Reset()
		c := validConfig()
		c.Limit = 1
		c.DryRun = true
		c.LogKey = tt.logKey
		name := "nokey@file"
		if tt.logKey {
			name = "key@file"
		}
		h := newMiddleware(t, c, name)
		// One denial: a new middleware writes its first line at once.
		for i := 1; i <= 2; i++ {
			if w := serve(h, "203.0.113.7:1", nil); w.Code != http.StatusOK {
				t.Fatalf("logKey %v, request %d: status %d in dry run", tt.logKey, i, w.Code)
			}
		}
		if log.String() != tt.want {
			t.Errorf("logKey %v: dry-run log %q, want %q", tt.logKey, log.String(), tt.want)
		}
	}
}

func TestSources(t *testing.T) {
	tests := []struct {
		name  string
		sc    *SourceCriterion
		same  [2]http.Header // two requests that must share a count
		other http.Header    // a request with its own count
	}{
		{
			name:  "depth",
			sc:    &SourceCriterion{IPStrategy: &IPStrategy{Depth: 1}},
			same:  [2]http.Header{{"X-Forwarded-For": {"1.1.1.1, 9.9.9.9"}}, {"X-Forwarded-For": {"2.2.2.2, 9.9.9.9"}}},
			other: http.Header{"X-Forwarded-For": {"1.1.1.1, 8.8.8.8"}},
		},
		{
			name:  "excluded",
			sc:    &SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}},
			same:  [2]http.Header{{"X-Forwarded-For": {"9.9.9.9, 10.0.0.1"}}, {"X-Forwarded-For": {"9.9.9.9"}}},
			other: http.Header{"X-Forwarded-For": {"9.9.9.9, 8.8.8.8"}},
		},
		{
			name:  "ipv6Subnet",
			sc:    &SourceCriterion{IPStrategy: &IPStrategy{Depth: 1, IPv6Subnet: 64}},
			same:  [2]http.Header{{"X-Forwarded-For": {"2001:db8:1:2::1"}}, {"X-Forwarded-For": {"2001:db8:1:2::ffff"}}},
			other: http.Header{"X-Forwarded-For": {"2001:db8:1:3::1"}},
		},
		{
			name:  "header",
			sc:    &SourceCriterion{RequestHeaderName: "X-Api-Key"},
			same:  [2]http.Header{{"X-Api-Key": {"k1"}}, {"X-Api-Key": {"k1"}, "X-Forwarded-For": {"1.1.1.1"}}},
			other: http.Header{"X-Api-Key": {"k2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			c.Limit = 1
			c.SourceCriterion = tt.sc
			h := newMiddleware(t, c, "src@file")
			if w := serve(h, "10.9.9.9:1", tt.same[0]); w.Code != 200 {
				t.Fatalf("first request: %d", w.Code)
			}
			if w := serve(h, "10.9.9.8:1", tt.same[1]); w.Code != 429 {
				t.Errorf("same key: %d, want 429", w.Code)
			}
			if w := serve(h, "10.9.9.9:1", tt.other); w.Code != 200 {
				t.Errorf("other key: %d, want 200", w.Code)
			}
		})
	}
}

func TestRequestHost(t *testing.T) {
	c := validConfig()
	c.Limit = 1
	c.SourceCriterion = &SourceCriterion{RequestHost: true}
	h := newMiddleware(t, c, "host@file")
	do := func(host string) int {
		r := httptest.NewRequest(http.MethodGet, "http://"+host+"/", nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if do("a.example") != 200 || do("A.Example") != 429 || do("b.example") != 200 {
		t.Error("host source does not key on the lowercased host")
	}
}

func TestRemoteAddrWithoutPort(t *testing.T) {
	c := validConfig()
	c.Limit = 1
	h := newMiddleware(t, c, "noport@file")
	if serve(h, "203.0.113.7", nil).Code != 200 || serve(h, "203.0.113.7", nil).Code != 429 || serve(h, "", nil).Code != 200 {
		t.Error("a remote address without port is not its own key")
	}
}

func TestStoreSeam(t *testing.T) {
	c := validConfig()
	c.Limit = 2
	h := newMiddleware(t, c, "store@file")
	m := middlewareOf(h)
	useStore(m, ratelimit.Memory{})
	setPath(m, pathAny) // as New chooses for a store (see choosePath)
	h = handlerOf(m)
	codes := []int{}
	for i := 0; i < 3; i++ {
		codes = append(codes, serve(h, "203.0.113.7:1", nil).Code)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Errorf("codes through the store: %v", codes)
	}
	useStore(m, failingStore{})
	if w := serve(h, "203.0.113.7:1", nil); w.Code != 200 {
		t.Errorf("store error: %d, want the request through", w.Code)
	}
}

type failingStore struct{}

func (failingStore) Take(context.Context, time.Time, []ratelimit.Item, []ratelimit.Decision) (bool, error) {
	return false, errors.New("down")
}

func TestConcurrentRequests(t *testing.T) {
	c := validConfig()
	c.Limit = 100
	h := newMiddleware(t, c, "concurrent@file")
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if serve(h, "203.0.113.7:1", nil).Code == 200 {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if allowed != 100 {
		t.Errorf("%d of 400 concurrent requests allowed, want exactly 100", allowed)
	}
}

func BenchmarkServeHTTP(b *testing.B) {
	for _, bc := range []struct {
		name  string
		limit int64
	}{{"allowed", 1 << 30}, {"denied", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			c := validConfig()
			c.Limit = bc.limit
			forget("bench@file")
			h, err := newChecked(context.Background(), okHandler, c, "bench@file")
			if err != nil {
				b.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			r.RemoteAddr = "203.0.113.7:4711"
			w := &resetWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(w, r)
			}
			forget("bench@file")
		})
	}
}

type resetWriter struct{ h http.Header }

func (w *resetWriter) Header() http.Header         { return w.h }
func (w *resetWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *resetWriter) WriteHeader(int)             {}

// Header values are right whichever table, or none, the middleware uses.
func TestHeadersBeyondTable(t *testing.T) {
	tests := []struct {
		window              string
		limit               int64
		remaining, resetMax int
	}{
		{"1m", 20, 19, 66},
		{"1m", 5000, 4999, 66},
		{"2h", 20, 19, 7920},
		{"1m", 100000, 99999, 66},       // beyond the tables: values formatted
		{"24h", 20, 19, 24*3600 + 8640}, // likewise
	}
	for _, tt := range tests {
		c := validConfig()
		c.Window = tt.window
		c.Limit = tt.limit
		h := newMiddleware(t, c, "table@file")
		w := serve(h, "[2001:db8::1]:443", nil)
		if got := w.Header().Get("X-RateLimit-Remaining"); got != strconv.Itoa(tt.remaining) {
			t.Errorf("%s %d: X-RateLimit-Remaining %q, want %d", tt.window, tt.limit, got, tt.remaining)
		}
		reset, err := strconv.Atoi(w.Header().Get("X-RateLimit-Reset"))
		if err != nil || reset < 1 || reset > tt.resetMax {
			t.Errorf("%s %d: X-RateLimit-Reset %q, want 1..%d", tt.window, tt.limit, w.Header().Get("X-RateLimit-Reset"), tt.resetMax)
		}
		if got := w.Header().Get("X-RateLimit-Limit"); got != strconv.FormatInt(tt.limit, 10) {
			t.Errorf("X-RateLimit-Limit %q", got)
		}
		forget("table@file")
	}
}

// The memory path's inline rejection and serveAny's
// (httplimit.WriteRejection, taken here because of an override no request
// matches) agree on a rejection's
// legacy headers.
func TestInlineRejectMatchesServeAny(t *testing.T) {
	inline := validConfig()
	inline.Limit = 1
	viaAny := validConfig()
	viaAny.Limit = 1
	viaAny.Headers = "both"
	viaAny.Overrides = []string{toServeAny}
	a := newMiddleware(t, inline, "inline@file")
	b := newMiddleware(t, viaAny, "any@file")
	if middlewareOf(b).path < pathRedis || middlewareOf(a).path >= pathRedis {
		t.Fatal("the test does not compare the inline rejection with serveAny's")
	}
	serve(a, "203.0.113.7:1", nil)
	serve(b, "203.0.113.7:1", nil)
	wa, wb := serve(a, "203.0.113.7:1", nil), serve(b, "203.0.113.7:1", nil)
	for _, k := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "Content-Type", "Content-Length", "X-Content-Type-Options"} {
		if wa.Header().Get(k) != wb.Header().Get(k) || wa.Header().Get(k) == "" {
			t.Errorf("%s: inline %q, serveAny %q", k, wa.Header().Get(k), wb.Header().Get(k))
		}
	}
	// The two requests are microseconds apart: a whole second may turn
	// between them.
	for _, k := range []string{"X-Ratelimit-Reset", "Retry-After"} {
		x, errA := strconv.Atoi(wa.Header().Get(k))
		y, errB := strconv.Atoi(wb.Header().Get(k))
		if errA != nil || errB != nil || x < 1 || y < 1 || x-y > 1 || y-x > 1 {
			t.Errorf("%s: inline %q, serveAny %q", k, wa.Header().Get(k), wb.Header().Get(k))
		}
	}
	if wa.Code != wb.Code || wa.Body.String() != wb.Body.String() {
		t.Errorf("inline %d %q, serveAny %d %q", wa.Code, wa.Body, wb.Code, wb.Body)
	}
}

// Every algorithm keeps the memory path's table lookups in range: Remaining
// at most the limit, Reset and Retry-After at most window plus sub-window.
func TestInlinePathAllAlgorithms(t *testing.T) {
	for _, alg := range []string{"sliding", "strict", "fixed", "log"} {
		c := validConfig()
		c.Window = "2s"
		c.Limit = 3
		c.Algorithm = alg
		h := newMiddleware(t, c, "alg@file")
		if middlewareOf(h).path >= pathRedis {
			t.Fatalf("%s: not on the memory path", alg)
		}
		for i := 0; i < 50; i++ {
			w := serve(h, "203.0.113."+strconv.Itoa(i%3)+":1", nil)
			for _, k := range []string{"X-RateLimit-Remaining", "X-RateLimit-Reset"} {
				v, err := strconv.Atoi(w.Header().Get(k))
				if err != nil || v < 0 || v > 3 {
					t.Errorf("%s: %s = %q", alg, k, w.Header().Get(k))
				}
			}
		}
		forget("alg@file")
	}
}

// headers: none writes no rate-limit header; a rejection still carries
// Retry-After.
func TestHeadersNone(t *testing.T) {
	c := validConfig()
	c.Limit = 1
	c.Headers = "none"
	h := newMiddleware(t, c, "none@file")
	w := serve(h, "203.0.113.7:1", nil)
	if w.Code != 200 || len(w.Header()) != 0 {
		t.Errorf("allowed: %d %v", w.Code, w.Header())
	}
	w = serve(h, "203.0.113.7:1", nil)
	if w.Code != 429 || w.Header().Get("Retry-After") == "" || w.Header().Get("X-RateLimit-Limit") != "" {
		t.Errorf("rejected: %d %v", w.Code, w.Header())
	}
}

// What handlers do to one response's headers never shows in another, on
// legacy headers (written inline) and both (memoryHeadersPath).
func TestHeadersAreNotShared(t *testing.T) {
	for _, headers := range []string{"legacy", "both"} {
		c := validConfig()
		c.Limit = 1
		c.Headers = headers
		name := "scribble-" + headers + "@file"
		forget(name)
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			headertest.Scribble(w.Header())
			w.WriteHeader(http.StatusOK)
		})
		h, err := newChecked(context.Background(), next, c, name)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			remote := "203.0.113." + strconv.Itoa(i) + ":1"
			serve(h, remote, nil) // scribbled by next
			headertest.Scribble(serve(h, remote, nil).Header())
		}
		plain := newMiddleware(t, c, name) // the same zone and tables, next leaves headers alone
		for _, w := range []*httptest.ResponseRecorder{serve(plain, "203.0.113.9:1", nil), serve(plain, "203.0.113.9:1", nil)} {
			if len(w.Header()) < 3 {
				t.Errorf("%s: status %d, only headers %v", headers, w.Code, w.Header())
			}
			if bad := headertest.Scribbled(w.Header()); len(bad) > 0 {
				t.Errorf("%s: status %d: %v changed by other responses: %v", headers, w.Code, bad, w.Header())
			}
		}
		forget(name)
	}
}
