package caddymodule

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}

var nopNext = caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })

// BenchmarkServeHTTP measures the handler's own cost per request; see
// scripts/bench-caddy.sh for the throughput of a whole Caddy. Every
// iteration gets a fresh replacer, as every request does in Caddy; the
// "baseline" case measures that setup alone, to subtract.
func BenchmarkServeHTTP(b *testing.B) {
	noErrorRoutes := &caddyhttp.Server{}
	withErrorRoutes := &caddyhttp.Server{Errors: &caddyhttp.HTTPErrorConfig{Routes: caddyhttp.RouteList{{}}}}
	cases := []struct {
		name, config string
		srv          *caddyhttp.Server
	}{
		{"baseline", "", noErrorRoutes},
		{"allowed/client_ip", `{"rate_limits":{"b1":{"window":"1m","limit":1000000000}}}`, noErrorRoutes},
		{"allowed/header_key", `{"rate_limits":{"b2":{"key":"{http.request.header.X-API-Key}","window":"1m","limit":1000000000}}}`, noErrorRoutes},
		{"allowed/two_zones", `{"rate_limits":{"b3":{"window":"1m","limit":1000000000},"b4":{"key":"static","window":"1m","limit":1000000000}}}`, noErrorRoutes},
		{"allowed/headers_none", `{"headers":"none","rate_limits":{"b5":{"window":"1m","limit":1000000000}}}`, noErrorRoutes},
		{"denied/no_error_routes", `{"rate_limits":{"b6":{"window":"1m","limit":1}}}`, noErrorRoutes},
		{"denied/handle_errors", `{"rate_limits":{"b7":{"window":"1m","limit":1}}}`, withErrorRoutes},
		// A CIDR override the client is outside of, and one that lifts the
		// client's limit (the client IP read from a proxy's header, not the
		// connection's address: the proxy check runs).
		{"override/outside", `{"rate_limits":{"b8":{"window":"1m","limit":1000000000,"overrides":[{"cidr":"10.0.0.0/8","unlimited":true}]}}}`, noErrorRoutes},
		{"override/raised", `{"rate_limits":{"b9":{"window":"1m","limit":1000000000,"overrides":[{"cidr":"203.0.113.0/24","limit":1073741824}]}}}`, noErrorRoutes},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var h *Handler
			if c.config != "" {
				h, _ = newHandler(b, c.config)
			}
			if strings.HasPrefix(c.name, "override/") {
				// Behind trusted proxies: an override that lifts the
				// limit checks that the client IP is no proxy.
				h.proxies = &trustedProxies{ranges: prefixes(b, privateRanges...)}
			}
			base := httptest.NewRequest(http.MethodGet, "http://example.com/api/x", nil)
			base.Header.Set("X-API-Key", "key-123")
			vars := map[string]any{caddyhttp.ClientIPVarKey: "203.0.113.7"}
			ctx := context.WithValue(base.Context(), caddyhttp.VarsCtxKey, vars)
			ctx = context.WithValue(ctx, caddyhttp.ServerCtxKey, c.srv)
			w := &nopWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				repl := caddy.NewReplacer()
				r := base.WithContext(context.WithValue(ctx, caddy.ReplacerCtxKey, repl))
				if h != nil {
					h.ServeHTTP(w, r, nopNext)
				}
			}
		})
	}
}

// BenchmarkServeHTTPRedis measures the handler's cost per request with the
// counts in Redis, on one hot key: "lease_off" is one script call per
// request, "lease_auto" admits most requests from this instance's leases.
func BenchmarkServeHTTPRedis(b *testing.B) {
	addr := redistest.BenchAddr(b)
	for _, mode := range []string{"off", "auto"} {
		b.Run("lease_"+mode, func(b *testing.B) {
			// on_store_error deny: a store that fails denies, so that a
			// failure cannot pass for a decision; every request must reach
			// the next handler.
			h, _ := newHandler(b, `{"rate_limits":{"bl`+mode+`":{"window":"1m","limit":1000000000}},"on_store_error":"deny",`+
				`"redis":{"address":"`+addr+`","key_prefix":"bench:","lease":"`+mode+`"}}`)
			base := httptest.NewRequest(http.MethodGet, "http://example.com/api/x", nil)
			vars := map[string]any{caddyhttp.ClientIPVarKey: "203.0.113.7"}
			ctx := context.WithValue(base.Context(), caddyhttp.VarsCtxKey, vars)
			ctx = context.WithValue(ctx, caddyhttp.ServerCtxKey, &caddyhttp.Server{})
			w := &nopWriter{h: make(http.Header)}
			passed, n := 0, 0
			next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { passed++; return nil })
			b.ReportAllocs()
			for b.Loop() {
				repl := caddy.NewReplacer()
				r := base.WithContext(context.WithValue(ctx, caddy.ReplacerCtxKey, repl))
				if err := h.ServeHTTP(w, r, next); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if passed != n {
				b.Fatalf("%d of %d requests reached the next handler: the store failed (on_store_error deny), so this is no measure of a decision", passed, n)
			}
		})
	}
}

// BenchmarkServeHTTPRedisBusyKeys measures what the handler and its Redis
// client cost this process per request as on scripts/bench-caddy.sh's
// Redis site: 32 concurrent callers, a random key per request, a window of
// 1s in sub-windows of 100ms, lease auto, against a real redis-server.
// The keys are drawn from 100,000, not 1000: at this loop's rate 1000 keys
// would turn hot and be admitted from leases, where the site's, at
// Caddy's rate, each cost a call. cpu-µs/op is this process's CPU
// time (user and system, the pipelines' goroutines and the collector
// included) per request, which the machine's other load moves less than
// ns/op; "baseline" is the same loop without the handler, to subtract.
// Each request's context is canceled as it ends, as net/http's is: the
// pipeline's wait selects on it. calls/pipeline is how many script calls
// went out in each pipeline, on average.
func BenchmarkServeHTTPRedisBusyKeys(b *testing.B) {
	addr := redistest.BenchAddr(b)
	keys := make([]string, 100000)
	for i := range keys {
		keys[i] = strconv.Itoa(i + 1)
	}
	for _, name := range []string{"baseline", "redis"} {
		b.Run(name, func(b *testing.B) {
			var h *Handler
			var pipe *pipeliner
			if name == "redis" {
				// on_store_error deny: a store that fails denies, so that a
				// failure cannot pass for a decision.
				h, _ = newHandler(b, `{"rate_limits":{"busy":{"key":"{http.request.header.X-Key}","window":"1s","sub_window":"100ms","limit":1000000000}},`+
					`"on_store_error":"deny","redis":{"address":"`+addr+`","key_prefix":"benchbusy:"}}`)
				v, _, _ := redisStores.LoadOrNew(h.redisKey, nil)
				pipe = v.(*pooledRedis).runner.pipe
				redisStores.Delete(h.redisKey)
			}
			srv := &caddyhttp.Server{}
			var passed, seed atomic.Int64
			next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { passed.Add(1); return nil })
			b.SetParallelism(16) // 32 callers on 2 cores, as wrk -c32
			b.ReportAllocs()
			var pipelines uint64
			if pipe != nil {
				pipelines = pipe.pipelines.Load()
			}
			cpu := cpuTime(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(uint64(seed.Add(1)), 0))
				base := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
				vars := map[string]any{caddyhttp.ClientIPVarKey: "203.0.113.7"}
				ctx := context.WithValue(base.Context(), caddyhttp.VarsCtxKey, vars)
				ctx = context.WithValue(ctx, caddyhttp.ServerCtxKey, srv)
				w := &nopWriter{h: make(http.Header)}
				for pb.Next() {
					base.Header.Set("X-Key", keys[rng.IntN(len(keys))])
					// A context ended with the request and a replacer with
					// its placeholders, which the key reads, as net/http and
					// Caddy give every request.
					rctx, cancel := context.WithCancel(ctx)
					r := base.WithContext(rctx)
					caddyhttp.NewTestReplacer(r)
					var err error
					if h == nil {
						err = next.ServeHTTP(w, r)
					} else {
						err = h.ServeHTTP(w, r, next)
					}
					cancel()
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1000, "cpu-µs/op")
			if pipe != nil {
				b.ReportMetric(float64(b.N)/float64(pipe.pipelines.Load()-pipelines), "calls/pipeline")
			}
			if n := passed.Load(); n != int64(b.N) {
				b.Fatalf("%d of %d requests reached the next handler: the store failed (on_store_error deny), so this is no measure of a decision", n, b.N)
			}
		})
	}
}

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
