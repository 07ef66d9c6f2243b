package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// BenchmarkServeHTTPInFlight measures a request of a memory zone with
// in_flight, alone and beside a rate, against the rate alone, as
// BenchmarkServeHTTP does (its "baseline" is the replacer's cost).
func BenchmarkServeHTTPInFlight(b *testing.B) {
	for _, c := range []struct{ name, config string }{
		{"rate_only", `{"rate_limits":{"bf1":{"window":"1m","limit":1000000000}}}`},
		{"in_flight_alone", `{"rate_limits":{"bf2":{"in_flight":1000}}}`},
		{"in_flight_and_rate", `{"rate_limits":{"bf3":{"window":"1m","limit":1000000000,"in_flight":1000}}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			h, _ := newHandler(b, c.config)
			base := httptest.NewRequest(http.MethodGet, "http://example.com/api/x", nil)
			vars := map[string]any{caddyhttp.ClientIPVarKey: "203.0.113.7"}
			ctx := context.WithValue(base.Context(), caddyhttp.VarsCtxKey, vars)
			ctx = context.WithValue(ctx, caddyhttp.ServerCtxKey, &caddyhttp.Server{})
			w := &nopWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				r := base.WithContext(context.WithValue(ctx, caddy.ReplacerCtxKey, caddy.NewReplacer()))
				h.ServeHTTP(w, r, nopNext)
			}
		})
	}
}

// TestInFlightRedisCalls: with Redis, a request of a zone of in_flight
// alone is two script calls (take, release), one beside a rate served
// without a lease three (take, the rate, release), and a refused one one.
func TestInFlightRedisCalls(t *testing.T) {
	srv := redistest.Start(t)
	for _, c := range []struct {
		name, zone, lease string
		want              int64
	}{
		{"alone", `"in_flight":5`, "off", 2},
		{"with_rate", `"in_flight":5,"window":"1m","limit":1000`, "off", 2},
		// A zone with in_flight takes no leases: its slot is one call a
		// request whatever a lease would spare.
		{"with_rate_leases_auto", `"in_flight":5,"window":"1m","limit":1000`, "auto", 2},
		{"with_rate_and_ban", `"in_flight":5,"window":"1m","limit":1000,"ban":"1m"`, "off", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := newHandler(t, `{"rate_limits":{"rc`+c.name+`":{"key":"{http.request.header.X-Key}",`+c.zone+`}},`+
				`"redis":{"address":"`+srv.Addr()+`","key_prefix":"calls:","lease":"`+c.lease+`"}}`)
			send(context.Background(), h, "warm", nopNext) // loads the scripts
			// Until the warm request's release, sent in the background,
			// has been counted: the calls stay still for 200 ms.
			before := scriptCalls(t, srv.Addr())
			for still := time.Now(); time.Since(still) < 200*time.Millisecond; time.Sleep(10 * time.Millisecond) {
				if n := scriptCalls(t, srv.Addr()); n != before {
					before, still = n, time.Now()
				}
			}
			const n = 20
			for i := 0; i < n; i++ {
				if code, _ := send(context.Background(), h, "k", nopNext); code != 200 {
					t.Fatalf("request %d: %d", i, code)
				}
			}
			// Releases are sent in the background: wait for the last.
			waitUntil(t, func() bool { return scriptCalls(t, srv.Addr())-before >= c.want*n })
			if got := scriptCalls(t, srv.Addr()) - before; got != c.want*n {
				t.Fatalf("%d script calls for %d requests, want %d a request", got, n, c.want)
			}
			t.Logf("%s: %d script calls a request", c.name, c.want)
		})
	}
}
