package caddymodule

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// backend is a next handler that records, per key (the X-Key header),
// how many requests it held at once and the most it ever held.
type backend struct {
	mu   sync.Mutex
	now  map[string]int
	most map[string]int
	hold func(r *http.Request) // what a request does while held
}

func newBackend(hold func(r *http.Request)) *backend {
	return &backend{now: map[string]int{}, most: map[string]int{}, hold: hold}
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	k := r.Header.Get("X-Key")
	b.mu.Lock()
	b.now[k]++
	b.most[k] = max(b.most[k], b.now[k])
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.now[k]--
		b.mu.Unlock()
	}()
	b.hold(r)
	return nil
}

func (b *backend) mostOf(k string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.most[k]
}

// send serves one request of key through h to next, with ctx, and returns
// its status and headers.
func send(ctx context.Context, h *Handler, key string, next caddyhttp.Handler) (int, http.Header) {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil).WithContext(ctx)
	r.Header.Set("X-Key", key)
	vars := map[string]any{caddyhttp.ClientIPVarKey: "203.0.113.7"}
	r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
	caddyhttp.NewTestReplacer(r)
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, r, next); err != nil {
		if he, ok := err.(caddyhttp.HandlerError); ok {
			return he.StatusCode, w.Header()
		}
		return 500, w.Header()
	}
	return w.Code, w.Header()
}

const keyedInFlight = `{"rate_limits":{"api":{"key":"{http.request.header.X-Key}","in_flight":3}}}`

// TestInFlightAtMostN: 12 clients on one key, in_flight 3, a slow
// backend: it held exactly 3 of the key at most; another key's requests,
// sent meanwhile, all pass; every slot is free afterwards.
func TestInFlightAtMostN(t *testing.T) {
	h, _ := newHandler(t, keyedInFlight)
	b := newBackend(func(*http.Request) { time.Sleep(20 * time.Millisecond) })
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < 12; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				switch code, hdr := send(context.Background(), h, "a", b); code {
				case 200:
					ok.Add(1)
				case 429:
					refused.Add(1)
					if hdr.Get("Retry-After") != "1" {
						t.Errorf("Retry-After %q, want 1", hdr.Get("Retry-After"))
					}
				default:
					t.Errorf("status %d", code)
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		if code, _ := send(context.Background(), h, "b", b); code != 200 {
			t.Errorf("another key, one request at a time: %d", code)
		}
	}
	wg.Wait()
	if got := b.mostOf("a"); got != 3 {
		t.Fatalf("the backend held %d of the key at once, want exactly 3", got)
	}
	if l := h.zones[0].inflight; l.Held() != 0 || l.Keys() != 0 {
		t.Fatalf("after every response: %d slots held, %d keys", l.Held(), l.Keys())
	}
	t.Logf("120 requests on one key: %d served, %d refused", ok.Load(), refused.Load())
}

// TestInFlightFreedWhenDone: a slot is freed when its request ends by a
// panic or by its client leaving, so the next request of the key passes.
func TestInFlightFreedWhenDone(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"key":"{http.request.header.X-Key}","in_flight":1}}}`)
	l := h.zones[0].inflight
	func() {
		defer func() { recover() }()
		send(context.Background(), h, "k", caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { panic("boom") }))
	}()
	if l.Held() != 0 {
		t.Fatal("a panicking handler kept its slot")
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan int)
	go func() {
		code, _ := send(ctx, h, "k", caddyhttp.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) error {
			close(started)
			<-r.Context().Done() // a proxy returns when its client is gone
			return r.Context().Err()
		}))
		done <- code
	}()
	<-started
	if code, _ := send(context.Background(), h, "k", newBackend(func(*http.Request) {})); code != 429 {
		t.Fatalf("a second request while the first runs: %d, want 429", code)
	}
	cancel()
	<-done
	if code, _ := send(context.Background(), h, "k", newBackend(func(*http.Request) {})); code != 200 {
		t.Fatalf("after the client gave up: %d, want 200 (its slot freed at once)", code)
	}
}

// TestInFlightWithRate: beside window and limit both apply; a request the
// slot refuses is not counted by the rate, and one the rate refuses frees
// its slot at once.
func TestInFlightWithRate(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"key":"{http.request.header.X-Key}","in_flight":1,"window":"1m","limit":2}}}`)
	l := h.zones[0].inflight
	release := make(chan struct{})
	started := make(chan struct{})
	go send(context.Background(), h, "k", caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		close(started)
		<-release
		return nil
	}))
	<-started
	for i := 0; i < 5; i++ {
		if code, _ := send(context.Background(), h, "k", newBackend(func(*http.Request) {})); code != 429 {
			t.Fatalf("while the slot is held: %d, want 429", code)
		}
	}
	close(release)
	waitUntil(t, func() bool { return l.Held() == 0 })
	if code, _ := send(context.Background(), h, "k", newBackend(func(*http.Request) {})); code != 200 {
		t.Fatalf("the second request of the window: %d, want 200 (refused slots counted nothing)", code)
	}
	if code, _ := send(context.Background(), h, "k", newBackend(func(*http.Request) {})); code != 429 {
		t.Fatalf("the third: %d, want 429 from the rate", code)
	}
	if l.Held() != 0 {
		t.Fatal("a request the rate refused kept its slot")
	}
}

// TestInFlightHeaders: a refused request gets Retry-After 1 and the IETF
// policy of concurrent requests.
func TestInFlightHeaders(t *testing.T) {
	h, _ := newHandler(t, `{"headers":"both","rate_limits":{"api":{"key":"{http.request.header.X-Key}","in_flight":1}}}`)
	started, release := make(chan struct{}), make(chan struct{})
	go send(context.Background(), h, "k", caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		close(started)
		<-release
		return nil
	}))
	<-started
	defer close(release)
	code, hdr := send(context.Background(), h, "k", newBackend(func(*http.Request) {}))
	want := map[string]string{
		"Retry-After":           "1",
		"Ratelimit-Policy":      `"api";q=1;qu="concurrent-requests"`,
		"Ratelimit":             `"api";r=0;t=1`,
		"X-Ratelimit-Limit":     "1",
		"X-Ratelimit-Remaining": "0",
	}
	if code != 429 {
		t.Fatalf("status %d, want 429", code)
	}
	for k, v := range want {
		if hdr.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, hdr.Get(k), v)
		}
	}
}

// TestInFlightUnlimitedTakesNoSlot: an unlimited override is exempt from
// the zone's slots as from its rate.
func TestInFlightUnlimitedTakesNoSlot(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"key":"{http.request.header.X-Key}","in_flight":1,"window":"1m","limit":100,
		"overrides":[{"key":"vip","unlimited":true}]}}}`)
	started, release := make(chan struct{}), make(chan struct{})
	go send(context.Background(), h, "vip", caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		close(started)
		<-release
		return nil
	}))
	<-started
	defer close(release)
	if code, _ := send(context.Background(), h, "vip", newBackend(func(*http.Request) {})); code != 200 {
		t.Fatalf("an unlimited key's second request at once: %d, want 200", code)
	}
	if h.zones[0].inflight.Held() != 0 {
		t.Fatal("an unlimited key took a slot")
	}
}

// TestInFlightFreshKeysPastMaxKeys: a flood of fresh keys, each request
// held, past max_keys: a fresh key is refused rather than run without a
// slot; no key ever has more than n at the backend; nothing is left once
// they end.
func TestInFlightFreshKeysPastMaxKeys(t *testing.T) {
	h, _ := newHandler(t, `{"max_keys":100,"rate_limits":{"api":{"key":"{http.request.header.X-Key}","in_flight":2}}}`)
	release := make(chan struct{})
	b := newBackend(func(*http.Request) { <-release })
	var wg sync.WaitGroup
	codes := make(chan int, 400)
	for i := 0; i < 300; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := send(context.Background(), h, "k"+strconv.Itoa(i%150), b)
			codes <- code
		}()
	}
	l := h.zones[0].inflight
	// Every request arrived: 200 held, the rest answered.
	waitUntil(t, func() bool { return l.Keys() == 100 && l.Held() == 200 && len(codes) == 100 })
	close(release)
	wg.Wait()
	close(codes)
	n429 := 0
	for c := range codes {
		if c == 429 {
			n429++
		}
	}
	if n429 != 100 {
		t.Errorf("%d refused, want 100 (the 50 keys past max_keys, both requests)", n429)
	}
	for i := 0; i < 150; i++ {
		if m := b.mostOf("k" + strconv.Itoa(i)); m > 2 {
			t.Fatalf("key %d: %d at the backend at once", i, m)
		}
	}
	if l.Held() != 0 || l.Keys() != 0 {
		t.Fatalf("left behind: %d slots, %d keys", l.Held(), l.Keys())
	}
}

// waitUntil polls cond for up to 5s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
	}
}

// TestInFlightCaddyfile: in_flight and in_flight_ttl parse alone and
// beside a rate; each bad value is refused with the option named.
func TestInFlightCaddyfile(t *testing.T) {
	var h Handler
	in := "rate_limit {\n\tzone a {\n\t\tin_flight 3\n\t\tin_flight_ttl 10s\n\t}\n\tzone b {\n\t\twindow 1m\n\t\tlimit 5\n\t\tin_flight 2\n\t}\n}"
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
		t.Fatal(err)
	}
	if a, b := h.RateLimits["a"], h.RateLimits["b"]; a.InFlight != 3 || time.Duration(a.InFlightTTL) != 10*time.Second || b.InFlight != 2 || b.Limit != 5 {
		t.Fatalf("parsed %+v and %+v", a, b)
	}
	for _, tt := range []struct{ name, zone, want string }{
		{"zero", "in_flight 0", "in_flight: want a positive integer"},
		{"word", "in_flight some", "in_flight: want a positive integer"},
		{"ttl alone", "window 1m\n\t\tlimit 5\n\t\tin_flight_ttl 10s", "in_flight_ttl applies only with in_flight"},
		{"ttl short", "in_flight 2\n\t\tin_flight_ttl 500ms", "in_flight_ttl 500ms is too short"},
		{"ttl bad", "in_flight 2\n\t\tin_flight_ttl soon", "in_flight_ttl: want a positive duration"},
		{"sub_window alone", "in_flight 2\n\t\tsub_window 1s", "sub_window needs window and limit"},
		{"count_status alone", "in_flight 2\n\t\tcount_status 401", "count_status needs window and limit"},
		{"override alone", "in_flight 2\n\t\toverride vip unlimited", "override needs window and limit"},
		{"window without limit", "in_flight 2\n\t\twindow 1m", "limit is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("rate_limit {\n\tzone a {\n\t\t" + tt.zone + "\n\t}\n}"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestInFlightAdmin: the admin API shows a key's slots, and a DELETE
// frees them: the next request of the key runs beside the one still
// running, whose end then frees nothing of the new slot.
func TestInFlightAdmin(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"adm":{"key":"{http.request.header.X-Key}","in_flight":1}}}`)
	l := h.zones[0].inflight
	admin := func(method string) string {
		w := httptest.NewRecorder()
		if err := (adminAPI{}).serveInFlight(w, httptest.NewRequest(method, adminInFlightPrefix+"adm/k", nil)); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return strings.TrimSpace(w.Body.String())
	}
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(context.Background(), h, "k", caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
			close(started)
			<-release
			return nil
		}))
	}()
	<-started
	if got, want := admin(http.MethodGet), `[{"zone":"adm","store":"memory","key":"k","in_flight":1,"held":1}]`; got != want {
		t.Fatalf("GET: %s, want %s", got, want)
	}
	if got := admin(http.MethodDelete); !strings.Contains(got, `"freed":1`) {
		t.Fatalf("DELETE: %s, want freed 1", got)
	}
	started2, release2 := make(chan struct{}), make(chan struct{})
	done2 := make(chan int)
	go func() {
		code, _ := send(context.Background(), h, "k", caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
			close(started2)
			<-release2
			return nil
		}))
		done2 <- code
	}()
	<-started2
	close(release)
	<-done
	if code, _ := send(context.Background(), h, "k", newBackend(func(*http.Request) {})); code != 429 {
		t.Fatalf("the old request's end freed the new slot: %d, want 429", code)
	}
	close(release2)
	if code := <-done2; code != 200 {
		t.Fatalf("after the DELETE: %d, want 200", code)
	}
	if l.Held() != 0 || l.Keys() != 0 {
		t.Fatalf("left behind: %d slots, %d keys", l.Held(), l.Keys())
	}
}

// TestInFlightGauge: the zone's gauge is the slots this instance holds.
func TestInFlightGauge(t *testing.T) {
	h, ctx := newHandler(t, `{"rate_limits":{"gauge":{"key":"{http.request.header.X-Key}","in_flight":5}}}`)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(context.Background(), h, "k"+strconv.Itoa(i), newBackend(func(*http.Request) { <-release }))
		}()
	}
	value := func() float64 {
		mfs, err := ctx.GetMetricsRegistry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "caddy_http_rate_limit_in_flight" {
				for _, m := range mf.Metric {
					if m.Label[0].GetValue() == "gauge" {
						return m.GetGauge().GetValue()
					}
				}
			}
		}
		return -1
	}
	waitUntil(t, func() bool { return value() == 2 })
	close(release)
	wg.Wait()
	if v := value(); v != 0 {
		t.Fatalf("gauge %v after the responses, want 0", v)
	}
}

// TestInFlightReloadKeepsSlots: a config loaded beside the old one (a
// reload) shares its slots while their settings hold.
func TestInFlightReloadKeepsSlots(t *testing.T) {
	const config = `{"rate_limits":{"rel":{"key":"{http.request.header.X-Key}","in_flight":1}}}`
	old, _ := newHandler(t, config)
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(context.Background(), old, "k", caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
			close(started)
			<-release
			return nil
		}))
	}()
	<-started
	reloaded, _ := newHandler(t, config)
	if code, _ := send(context.Background(), reloaded, "k", nopNext); code != 429 {
		t.Fatalf("after a reload, while the old request runs: %d, want 429", code)
	}
	close(release)
	<-done
	if code, _ := send(context.Background(), reloaded, "k", nopNext); code != 200 {
		t.Fatalf("once it ended: %d, want 200", code)
	}
}

// TestInFlightDryRun: in dry run a request past n runs, without a slot,
// and is counted as a dry-run refusal.
func TestInFlightDryRun(t *testing.T) {
	h, _ := newHandler(t, `{"dry_run":true,"rate_limits":{"dry":{"key":"{http.request.header.X-Key}","in_flight":1}}}`)
	started, release := make(chan struct{}), make(chan struct{})
	go send(context.Background(), h, "k", caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		close(started)
		<-release
		return nil
	}))
	<-started
	defer close(release)
	b := newBackend(func(*http.Request) {})
	if code, hdr := send(context.Background(), h, "k", b); code != 200 || b.mostOf("k") != 1 || hdr.Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("dry run past n: %d, backend %d, remaining %q; want 200, reached, 0", code, b.mostOf("k"), hdr.Get("X-Ratelimit-Remaining"))
	}
	if got := h.zones[0].inflight.Held(); got != 1 {
		t.Fatalf("%d slots held, want 1 (the dry-run request runs without one)", got)
	}
}

// TestInFlightTTLNeedsRedis: in_flight_ttl without store redis is refused
// with the fix.
func TestInFlightTTLNeedsRedis(t *testing.T) {
	h := new(Handler)
	if err := json.Unmarshal([]byte(`{"rate_limits":{"t":{"in_flight":2,"in_flight_ttl":"10s"}}}`), h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	err := h.Provision(ctx)
	h.Cleanup()
	if err == nil || !strings.Contains(err.Error(), "in_flight_ttl applies only with store redis") {
		t.Fatalf("Provision: %v", err)
	}
}
