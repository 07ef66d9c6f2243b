package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// piecesSource times, under yaegi, the pieces of the plugin's request
// path one by one, so that a change to one of them can be measured alone.
const piecesSource = `package pieces

import (
	"net/http"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

func Loop(kind string, n int) time.Duration {
	allow, _ := ratelimit.NewZone("allow", ratelimit.Rule{Window: time.Minute, Limit: 1 << 30}, ratelimit.Options{})
	deny, _ := ratelimit.NewZone("deny", ratelimit.Rule{Window: time.Minute, Limit: 1}, ratelimit.Options{})
	defer allow.Close()
	defer deny.Close()
	p := httplimit.NewPolicy("api", time.Minute, 1<<30, httplimit.HeadersLegacy)
	h := http.Header{}
	d := ratelimit.Decision{Allowed: true, Limit: 1 << 30, Remaining: 5, ResetAfter: time.Second}
	now := time.Now()
	start := time.Now()
	switch kind {
	case "TakeAt-allowed":
		for k := 0; k < n; k++ {
			d = ratelimit.TakeAt(allow, "203.0.113.7", now)
		}
	case "TakeAt-denied":
		for k := 0; k < n; k++ {
			d = ratelimit.TakeAt(deny, "203.0.113.7", now)
		}
	case "TakeReservedAt":
		for k := 0; k < n; k++ {
			d = ratelimit.TakeReservedAt(allow, "203.0.113.7", now, 0)
		}
	case "TakeReservedAt+RefundAt":
		for k := 0; k < n; k++ {
			d = ratelimit.TakeReservedAt(allow, "203.0.113.7", now, 0)
			ratelimit.RefundAt(allow, "203.0.113.7", &d)
		}
	case "WriteHeaders":
		for k := 0; k < n; k++ {
			httplimit.WriteHeaders(p, h, d)
		}
	case "remote-addr-key":
		for k := 0; k < n; k++ {
			key := "203.0.113.7:4711"
			if i := strings.LastIndexByte(key, ':'); i > 0 {
				key = key[:i]
			}
		}
	case "time.Now()":
		for k := 0; k < n; k++ {
			now = time.Now()
		}
	}
	return time.Since(start)
}
`

// BenchmarkPieces prints the cost of each piece of the request path under
// yaegi.
func BenchmarkPieces(b *testing.B) {
	i := newInterpreter(b)
	if _, err := i.Eval(piecesSource); err != nil {
		b.Fatal(err)
	}
	loop := evalValue(b, i, "pieces.Loop").Interface().(func(string, int) time.Duration)
	for _, kind := range []string{"TakeAt-allowed", "TakeAt-denied", "TakeReservedAt", "TakeReservedAt+RefundAt", "WriteHeaders", "remote-addr-key", "time.Now()"} {
		b.Run(kind, func(b *testing.B) {
			b.ReportAllocs()
			d := loop(kind, b.N)
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "ns/piece")
		})
	}
}

// BenchmarkTrivialPlugin times under yaegi the reference middlewares of
// scripts/floorplugin, which scripts/bench-traefik.sh runs in Traefik: the
// one that only calls the next handler, the trivial counter (a mutex, a
// map increment, one header) and the least sliding window.
func BenchmarkTrivialPlugin(b *testing.B) {
	i := newInterpreter(b)
	src, err := os.ReadFile("../floorplugin/floor.go")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := i.Eval(string(src)); err != nil {
		b.Fatal(err)
	}
	for _, ctor := range []string{"floor.NewPassThrough", "floor.NewCounter", "floor.NewWindow"} {
		b.Run(ctor, func(b *testing.B) {
			h := evalValue(b, i, ctor).Interface().(func(http.Handler) http.Handler)(backend)
			r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for k := 0; k < b.N; k++ {
				h.ServeHTTP(w, r)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/op")
		})
	}
}
