package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkRedisLayersInterpreted prints what each layer of the Traefik
// plugin's Redis path costs under yaegi, from one goroutine, against
// fakeRedis (which answers at compiled speed, so that redis-server's
// share of the machine is left out): the client's EVALSHA, RedisStore.
// Take, Guard.Take, ratelimit.TakeRemote (the plugin's call into the
// core), and the plugin's ServeHTTP with a redis block, each
// pooled and auto-pipelined (the plugin always auto-pipelines). Compare
// the layers' cpu-µs/op and allocs/op within one run; cpu-µs/op is this
// process's CPU time, fakeRedis's few compiled µs included.
func BenchmarkRedisLayersInterpreted(b *testing.B) {
	addr := fakeRedis(b)
	i := newInterpreter(b)
	evalImport(b, i, "scripts/yaegitest/redisscenario")
	layer := evalValue(b, i, "redisscenario.Layer").Interface().(func(string, string, bool, int) (time.Duration, error))
	for _, name := range []string{"client", "store", "guard", "remote"} {
		for _, pipelined := range []bool{false, true} {
			mode := "pooled"
			if pipelined {
				mode = "pipelined"
			}
			b.Run(name+"-"+mode, func(b *testing.B) {
				b.ReportAllocs()
				cpu := cpuTime(b)
				if _, err := layer(addr, name, pipelined, b.N); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
			})
		}
	}
	// The plugin's ServeHTTP with a redis block.
	for _, limit := range []string{"60000"} {
		b.Run("plugin-pipelined-limit-"+limit, func(b *testing.B) {
			pb, _ := loadPlugin(b)
			h := pb.build(b, map[string]any{
				"window": "1m",
				"limit":  limit,
				"redis":  map[string]any{"endpoints": addr},
			}, "bench-redis-"+limit+"@file")
			req := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			req.RemoteAddr = "203.0.113.7:4711"
			w := &discard{h: http.Header{}}
			h.ServeHTTP(w, req)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime(b)
			for k := 0; k < b.N; k++ {
				h.ServeHTTP(w, req)
			}
			b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
		})
	}
}
