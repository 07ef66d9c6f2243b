package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// scriptCalls returns how many script calls the redis-server at addr ran.
func scriptCalls(tb testing.TB, addr string) int64 {
	c := redistest.Calls(tb, addr)
	return c["evalsha"] + c["eval"]
}

// leaseConfig is a redis block's settings as labels give them (every
// value a string), with redis.lease set to lease unless it is "-".
func leaseConfig(addr, limit, lease string) map[string]any {
	redis := map[string]any{
		"endpoints": addr,
		"keyPrefix": "lease" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":",
	}
	if lease != "-" {
		redis["lease"] = lease
	}
	return map[string]any{"window": "1m", "limit": limit, "redis": redis}
}

// awayFromTurn waits, when less than margin is left of the current
// sub-window of length sub (on the wall clock, which is Redis's here),
// for the next one to begin. A lease ends at its sub-window's turn and
// gives back its unspent units in a call of its own: a request decided by
// Redis meanwhile sees them still counted, its Remaining lower by as much
// (77 once in 40 runs), which an exact Remaining of every request cannot
// allow.
func awayFromTurn(sub, margin time.Duration) {
	if left := sub - time.Duration(time.Now().UnixNano())%sub; left < margin {
		time.Sleep(left + 20*time.Millisecond)
	}
}

// TestPluginRedisLease serves a hot key through the interpreted plugin
// with a redis block: with lease auto (the default) far fewer script
// calls than with lease off, the same statuses and X-RateLimit-Remaining;
// and two interpreted instances (two Traefik instances) sharing one
// redis-server, clients on both at once, admit exactly the limit.
func TestPluginRedisLease(t *testing.T) {
	srv := redistest.Start(t)
	const n = 1000
	calls := map[string]int64{}
	for _, lease := range []string{"OFF", "-", "auto"} {
		p, _ := loadPlugin(t)
		h := p.build(t, leaseConfig(srv.Addr(), "60000", lease), "hot-"+lease+"@docker")
		before := scriptCalls(t, srv.Addr())
		awayFromTurn(6*time.Second, 2*time.Second)
		for i := 1; i <= n; i++ {
			w := get(h, "203.0.113.7:1", "")
			if w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Remaining") != strconv.Itoa(60000-i) {
				t.Fatalf("lease %s, request %d: %d %v", lease, i, w.Code, w.Header())
			}
		}
		calls[lease] = scriptCalls(t, srv.Addr()) - before
	}
	t.Logf("%d requests on one key, interpreted: %d script calls with lease off, %d by default, %d with lease auto", n, calls["OFF"], calls["-"], calls["auto"])
	if calls["OFF"] < n || calls["-"]*20 > n || calls["auto"]*20 > n {
		t.Errorf("script calls for %d requests: off %d (want >= %d), default %d and auto %d (want <= %d)", n, calls["OFF"], n, calls["-"], calls["auto"], n/20)
	}

	// Two instances, 8 concurrent clients of one key on each, limit 200.
	const limit = 200
	config := leaseConfig(srv.Addr(), strconv.Itoa(limit), "-")
	pa, _ := loadPlugin(t)
	pb, _ := loadPlugin(t)
	hs := []http.Handler{pa.build(t, config, "two@docker"), pb.build(t, config, "two@docker")}
	before := scriptCalls(t, srv.Addr())
	var admitted int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(h http.Handler) {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				if get(h, "203.0.113.9:1", "").Code == http.StatusOK {
					atomic.AddInt64(&admitted, 1)
				}
			}
		}(hs[g%2])
	}
	wg.Wait()
	if admitted > limit {
		t.Fatalf("two instances, 480 concurrent requests: %d admitted, limit %d", admitted, limit)
	}
	concurrent := admitted
	// Then one at a time on each in turn: what the leases hold is spent.
	for i := 0; i < 400; i++ {
		if get(hs[i%2], "203.0.113.9:1", "").Code == http.StatusOK {
			admitted++
		}
	}
	used := scriptCalls(t, srv.Addr()) - before
	t.Logf("two instances, limit %d: %d admitted concurrently, %d in all, %d script calls for 880 requests", limit, concurrent, admitted, used)
	if admitted != limit {
		t.Errorf("two instances admitted %d, want exactly the limit %d", admitted, limit)
	}
	if used >= limit {
		t.Errorf("%d script calls for %d admitted requests: no lease spent", used, admitted)
	}
}

// BenchmarkRedisLeaseInterpreted prints what a request costs the
// interpreted plugin with a redis block on hot keys, with leases (the
// default) and without (redis.lease off), against a real redis-server
// (WINDOWLIMIT_BENCH_REDIS, or a throwaway one), from one goroutine:
// allocs/op and B/op are the interpreter's and the client's, cpu-µs/op
// this process's CPU time, calls/op the script calls Redis ran. inline
// is serveRedis (a limit within the decimals table: 60000 per
// second over 8 keys, so that every request is admitted), huge serveAny
// (takeFromStore, limit 1e9 per minute, one key).
func BenchmarkRedisLeaseInterpreted(b *testing.B) {
	addr := redistest.BenchAddr(b)
	for _, bc := range []struct {
		name, window, limit string
		keys                int
	}{
		{"inline", "1s", "60000", 8},
		{"huge", "1m", "1000000000", 1},
	} {
		for _, lease := range []string{"off", "auto"} {
			b.Run(bc.name+"-lease-"+lease, func(b *testing.B) {
				p, _ := loadPlugin(b)
				config := leaseConfig(addr, bc.limit, lease)
				config["window"] = bc.window
				// A store that fails denies: with the default (allow) a
				// failing store would pass for a decision below.
				config["onStoreError"] = "deny"
				h := p.build(b, config, "bench-lease-"+bc.name+"-"+lease+"@file")
				reqs := make([]*http.Request, bc.keys)
				for i := range reqs {
					reqs[i] = httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
					reqs[i].RemoteAddr = "203.0.113." + strconv.Itoa(i+1) + ":4711"
				}
				w := &okWriter{h: http.Header{}}
				for i := 0; i < 100; i++ {
					h.ServeHTTP(w, reqs[i%len(reqs)])
				}
				w.denied = 0
				calls := scriptCalls(b, addr)
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime(b)
				for i := 0; i < b.N; i++ {
					h.ServeHTTP(w, reqs[i%len(reqs)])
				}
				b.StopTimer()
				b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
				b.ReportMetric(float64(scriptCalls(b, addr)-calls)/float64(b.N), "calls/op")
				if w.denied != 0 {
					b.Fatalf("%d of %d requests denied: the benchmark measures admissions", w.denied, b.N)
				}
			})
		}
	}
}

// okWriter discards a response and counts the denials.
type okWriter struct {
	h      http.Header
	denied int
}

func (w *okWriter) Header() http.Header         { return w.h }
func (w *okWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *okWriter) WriteHeader(code int) {
	if code != http.StatusOK {
		w.denied++
	}
}
