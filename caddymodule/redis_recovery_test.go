package caddymodule

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestRedisRecoversAfterLongOutage: go-redis stops dialling a server after
// pool_size failed dials and then tries it once a second. An outage long
// enough for that, under load, must not delay the recovery: the store
// counts in Redis again within a few probe intervals of the restart.
func TestRedisRecoversAfterLongOutage(t *testing.T) {
	srv := redistest.Start(t)
	setup, err := (&RedisConfig{Address: srv.Addr(), PoolSize: 2}).resolve(guard.FailAllow)
	if err != nil {
		t.Fatal(err)
	}
	key, g, err := acquireRedis(setup, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer releaseRedis(key)
	z := testZone(t, "recover", ratelimit.Rule{Window: time.Hour, Limit: 1 << 20})
	take := func(k string) ratelimit.Decision {
		out := make([]ratelimit.Decision, 1)
		g.Take(context.Background(), time.Now(), []ratelimit.Item{{Zone: z, Key: k}}, out)
		return out[0]
	}
	if d := take("warm"); d.ResetAfter == 0 {
		t.Fatalf("before the outage: %+v, want a decision counted in Redis", d)
	}

	// Eight clients keep asking while Redis is down for two seconds: eight
	// probe intervals, and more failed dials than the pool has room for.
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				take("load")
				time.Sleep(time.Millisecond)
			}
		}()
	}
	srv.Kill()
	time.Sleep(2 * time.Second)
	if !g.Stats().Open {
		t.Fatal("the breaker did not open with Redis dead")
	}
	srv.Restart()
	restarted := time.Now()
	for g.Stats().Open && time.Since(restarted) < 5*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	closed := time.Since(restarted)
	stop.Store(true)
	wg.Wait()

	// Counted in Redis again: the allow policy would report no reset.
	failures := g.Stats().Failures
	d := take("after")
	if d.ResetAfter == 0 || g.Stats().Failures != failures {
		t.Fatalf("after the breaker closed: %+v, failures %d -> %d; want a decision counted in Redis",
			d, failures, g.Stats().Failures)
	}
	// The probe runs every 250 ms; go-redis's own redial would add up to a
	// second.
	if closed > 600*time.Millisecond {
		t.Errorf("breaker closed %v after Redis restarted, want within 600ms", closed)
	}
	t.Logf("breaker closed %v after Redis restarted", closed)
}
