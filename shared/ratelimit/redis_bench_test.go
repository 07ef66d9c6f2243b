package ratelimit_test

import (
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redisbench"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
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
	store, err := ratelimit.NewRedisStore(c, ratelimit.RedisOptions{KeyPrefix: "bench:"})
	if err != nil {
		b.Fatal(err)
	}
	redisbench.Decisions(b, addr, store)
}
