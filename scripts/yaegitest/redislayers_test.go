package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/scripts/yaegitest/redisscenario"
)

// BenchmarkRedisLayersInterpreted prints what each layer of the Traefik
// plugin's Redis path costs under yaegi, from one goroutine, against
// fakeRedis (which answers at compiled speed, so that redis-server's
// share of the machine is left out): the client's EVALSHA, redisstore.Store.
// Take, Guard.Take, redisstore.TakeKey (the plugin's call into the
// core), and the plugin's ServeHTTP with a redis block, each
// pooled and auto-pipelined (the plugin always auto-pipelines). Compare
// the layers' cpu-µs/op and allocs/op within one run; cpu-µs/op is this
// process's CPU time, fakeRedis's few compiled µs included. Each row
// checks that it measured decisions, one script call each: the plugin's
// middleware denies when its store fails (onStoreError deny), and decides
// every request in Redis (lease off: fakeRedis grants no lease anyway).
func BenchmarkRedisLayersInterpreted(b *testing.B) {
	addr, calls := fakeRedis(b)
	i := newInterpreter(b)
	evalImport(b, i, "scripts/yaegitest/redisscenario")
	layer := evalValue(b, i, "redisscenario.Layer").Interface().(func(string, string, bool, int) (time.Duration, error))
	for _, name := range []string{"client", "prepared", "store", "guard", "remote"} {
		for _, pipelined := range []bool{false, true} {
			mode := "pooled"
			if pipelined {
				mode = "pipelined"
			}
			b.Run(name+"-"+mode, func(b *testing.B) {
				b.ReportAllocs()
				cpu, before := cpuTime(b), calls.Load()
				if _, err := layer(addr, name, pipelined, b.N); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
				// Layer decides once before it starts the clock, and the
				// client layer checks the reply of one more call.
				pre := int64(1)
				if name == "client" || name == "prepared" {
					pre = 2
				}
				oneCallEach(b, calls.Load()-before-pre, b.N)
			})
		}
	}
	// The plugin's call compiled, for reference: what the fake Redis, the
	// system calls and the pipeline's goroutines cost without the
	// interpreter.
	b.Run("remote-pipelined-compiled", func(b *testing.B) {
		b.ReportAllocs()
		cpu, before := cpuTime(b), calls.Load()
		if _, err := redisscenario.Layer(addr, "remote", true, b.N); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
		oneCallEach(b, calls.Load()-before-1, b.N)
	})
	// The plugin's ServeHTTP with a redis block.
	for _, limit := range []string{"60000"} {
		b.Run("plugin-pipelined-limit-"+limit, func(b *testing.B) {
			pb, _ := loadPlugin(b)
			h := pb.build(b, map[string]any{
				"window":       "1m",
				"limit":        limit,
				"redis":        map[string]any{"endpoints": addr, "lease": "off"},
				"onStoreError": "deny",
			}, "bench-redis-"+limit+"@file")
			req := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			req.RemoteAddr = "203.0.113.7:4711"
			w := &okWriter{h: http.Header{}}
			h.ServeHTTP(w, req)
			b.ReportAllocs()
			b.ResetTimer()
			cpu, before := cpuTime(b), calls.Load()
			for k := 0; k < b.N; k++ {
				h.ServeHTTP(w, req)
			}
			b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
			b.StopTimer()
			if w.denied > 0 {
				b.Fatalf("%d of %d requests not answered 200: the store failed (onStoreError deny), so this is no measure of a decision", w.denied, b.N+1)
			}
			oneCallEach(b, calls.Load()-before, b.N)
		})
	}
	// The same on 1,000 keys from a header (serveAny), with leases on (the
	// default: every key is cold, so every request asks Redis) and off.
	for _, lease := range []string{"auto", "off"} {
		b.Run("plugin-pipelined-1000-keys-lease-"+lease, func(b *testing.B) {
			pb, _ := loadPlugin(b)
			h := pb.build(b, map[string]any{
				"window":          "1s",
				"limit":           "60000",
				"sourceCriterion": map[string]any{"requestHeaderName": "X-Key"},
				"redis":           map[string]any{"endpoints": addr, "lease": lease},
				"onStoreError":    "deny",
			}, "bench-redis-keys-"+lease+"@file")
			reqs := make([]*http.Request, 1000)
			for k := range reqs {
				reqs[k] = httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
				reqs[k].RemoteAddr = "203.0.113.7:4711"
				reqs[k].Header.Set("X-Key", strconv.Itoa(k))
			}
			w := &okWriter{h: http.Header{}}
			for _, r := range reqs {
				h.ServeHTTP(w, r)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu, before := cpuTime(b), calls.Load()
			for k := 0; k < b.N; k++ {
				h.ServeHTTP(w, reqs[k%len(reqs)])
			}
			b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
			b.StopTimer()
			if w.denied > 0 {
				b.Fatalf("%d of %d requests not answered 200: the store failed (onStoreError deny), so this is no measure of a decision", w.denied, b.N+len(reqs))
			}
			oneCallEach(b, calls.Load()-before, b.N)
		})
	}
}

// oneCallEach fails b unless fakeRedis answered n calls for n decisions.
func oneCallEach(b *testing.B, calls int64, n int) {
	b.Helper()
	if calls != int64(n) {
		b.Fatalf("%d script calls for %d decisions, want one each", calls, n)
	}
}
