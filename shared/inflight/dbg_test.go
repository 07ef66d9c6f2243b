package inflight

import (
	"context"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

func TestDbg(t *testing.T) {
	addr := redistest.Start(t).Addr()
	c, _ := resp.New(resp.Options{Addrs: []string{addr}, ReadTimeout: 2 * time.Second})
	ctx := context.Background()
	rule := ratelimit.Rule{Algorithm: ratelimit.Sliding, Window: time.Hour, SubWindow: time.Minute, Limit: 6, Cost: 1}
	zone, _ := ratelimit.NewZone("d", rule, ratelimit.Options{})
	slots, _ := redisstore.NewSlots(c, "tw:")
	store, _ := redisstore.New(c, redisstore.Settings{KeyPrefix: "tw:"})
	red, _ := New(Options{Zone: "d", Remote: slots, TTL: time.Minute})
	for i, n := range []int64{2, 2, 0, 1} {
		if n == 0 {
			red.Release(red2)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		out := make([]ratelimit.Decision, 1)
		s, h, full, ok, err := red.TakeWith(ctx, store, []ratelimit.Item{{Zone: zone, Key: "a"}}, out, n, time.Now())
		if i == 0 {
			red2 = s
		}
		cnt, _ := red.Count(ctx, "a")
		t.Logf("%+v h=%d full=%v ok=%v err=%v out=%+v count=%d", s, h, full, ok, err, out[0], cnt)
	}
}

var red2 Slot
