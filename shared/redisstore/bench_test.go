package redisstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redisbench"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// BenchmarkRedisStoreResp: decisions per second through shared/resp, with
// a pool of connections and auto-pipelined over one connection.
func BenchmarkRedisStoreResp(b *testing.B) {
	b.Run("pooled", func(b *testing.B) { benchResp(b, false) })
	b.Run("pipelined", func(b *testing.B) { benchResp(b, true) })
}

func benchResp(b *testing.B, pipelined bool) {
	addr := redistest.BenchAddr(b)
	c, err := resp.New(resp.Options{Addrs: []string{addr}, PoolSize: 64, ReadTimeout: 2 * time.Second, AutoPipeline: pipelined})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	store, err := redisstore.New(c, redisstore.Settings{KeyPrefix: "bench:"})
	if err != nil {
		b.Fatal(err)
	}
	redisbench.Decisions(b, addr, store)
}

// BenchmarkRedisCountStatus: what a count_status zone costs a request in
// Redis, against a zone without it, one caller at a time on 1000 busy
// keys: its latency (ns/op, the round trips included), the script calls
// it makes, the commands those run and the server CPU they take. "reserved" is a response the zone
// counts (a failed login: the reservation stays), "refunded" one it does
// not (a success: one more call gives the count back).
func BenchmarkRedisCountStatus(b *testing.B) {
	addr := redistest.BenchAddr(b)
	c, err := resp.New(resp.Options{Addrs: []string{addr}, ReadTimeout: 2 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	store, err := redisstore.New(c, redisstore.Settings{KeyPrefix: "bench-cs:"})
	if err != nil {
		b.Fatal(err)
	}
	z, err := ratelimit.NewZone("login", ratelimit.Rule{Window: time.Minute, Limit: ratelimit.MaxLimit}, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer z.Close()
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "198.51." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
	}
	for _, bc := range []struct {
		name               string
		refundable, refund bool
	}{{"take", false, false}, {"reserved", true, false}, {"refunded", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			items := []ratelimit.Item{{Zone: z, Refundable: bc.refundable}}
			out := make([]ratelimit.Decision, 1)
			before := redistest.CommandStats(b, addr)
			i := 0
			for b.Loop() {
				items[0].Key = keys[i%len(keys)]
				i++
				if ok, err := store.Take(ctx, time.Now(), items, out); !ok || err != nil {
					b.Fatalf("take: %v %v", ok, err)
				}
				if bc.refund {
					if err := store.Refund(ctx, items, out); err != nil {
						b.Fatal(err)
					}
				}
			}
			after := redistest.CommandStats(b, addr)
			calls := after["evalsha"].Calls - before["evalsha"].Calls + after["eval"].Calls - before["eval"].Calls
			usec := after["evalsha"].Usec - before["evalsha"].Usec + after["eval"].Usec - before["eval"].Usec
			cmds := int64(0) // the commands the script ran
			for name, st := range after {
				if name != "evalsha" && name != "eval" && name != "info" {
					cmds += st.Calls - before[name].Calls
				}
			}
			b.ReportMetric(float64(calls)/float64(i), "calls/req")
			b.ReportMetric(float64(cmds)/float64(i), "cmds/req")
			b.ReportMetric(float64(usec)/float64(i), "redis-µs/req")
		})
	}
}
