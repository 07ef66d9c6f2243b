// Package redisbench is the body of the Redis store benchmarks, shared by
// the shared/resp and the go-redis ones so that both measure the same.
package redisbench

import (
	"context"
	"math/rand"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Decisions measures decisions per second through store at 50 concurrent
// callers (SetParallelism 25 on 2 cores), on 10000 keys that are always
// admitted, and the round trips per decision as the server counts them
// (EVALSHA and EVAL calls in INFO commandstats).
func Decisions(b *testing.B, addr string, store ratelimit.Store) {
	z, err := ratelimit.NewZone("bench", ratelimit.Rule{Window: time.Minute, Limit: ratelimit.MaxLimit}, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer z.Close()
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "203.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
	}
	before := redistest.Calls(b, addr)
	var seed int64
	b.SetParallelism(25)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewSource(atomic.AddInt64(&seed, 1)))
		out := make([]ratelimit.Decision, 1)
		items := []ratelimit.Item{{Zone: z}}
		for pb.Next() {
			items[0].Key = keys[rng.Intn(len(keys))]
			allowed, err := store.Take(context.Background(), time.Now(), items, out)
			if err != nil || !allowed {
				// A failed test prints no figure.
				b.Errorf("a decision of the store: allowed %v, error %v; every decision must be an admission", allowed, err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	after := redistest.Calls(b, addr)
	// The client sends EVALSHA (EVAL after a NOSCRIPT); the script's own
	// commands run inside the server and cost no round trip.
	trips := after["evalsha"] - before["evalsha"] + after["eval"] - before["eval"]
	if trips < int64(b.N) {
		b.Fatalf("%d script calls for %d decisions: not every decision reached Redis", trips, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/decision")
}
