package redisstore

import (
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"

	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// load runs workers that call g.Take until stop closes (each at most
// 100000 times) and records errors, denials and the slowest call.
type load struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	calls   int64
	errs    int64
	denied  int64
	slowest int64 // nanoseconds
}

func startLoad(g *guard.Guard, z *ratelimit.Zone, workers int) *load {
	l := &load{stop: make(chan struct{})}
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			out := make([]ratelimit.Decision, 1)
			items := []ratelimit.Item{{Zone: z, Key: "chaos"}}
			for i := 0; i < 100000; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				start := time.Now()
				allowed, err := g.Take(context.Background(), start, items, out)
				took := int64(time.Since(start))
				atomic.AddInt64(&l.calls, 1)
				if err != nil {
					atomic.AddInt64(&l.errs, 1)
				}
				if !allowed {
					atomic.AddInt64(&l.denied, 1)
				}
				for {
					old := atomic.LoadInt64(&l.slowest)
					if took <= old || atomic.CompareAndSwapInt64(&l.slowest, old, took) {
						break
					}
				}
				time.Sleep(50 * time.Microsecond) // a request rate, not a spin
			}
		}()
	}
	return l
}

// phase lets the load run for d, then resets the slowest call.
func (l *load) phase(d time.Duration) time.Duration {
	time.Sleep(d)
	return time.Duration(atomic.SwapInt64(&l.slowest, 0))
}

func (l *load) end() {
	close(l.stop)
	l.wg.Wait()
}

func chaosGuard(t *testing.T, addr string, readTimeout time.Duration, pipelined bool) (*guard.Guard, *ratelimit.Zone) {
	c := newClient(t, resp.Options{Addrs: []string{addr}, DialTimeout: 200 * time.Millisecond, ReadTimeout: readTimeout, WriteTimeout: readTimeout, AutoPipeline: pipelined})
	store, err := New(c, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	g := newGuard(t, store, guard.Options{Probe: store.Ping, ProbeTimeout: 300 * time.Millisecond})
	return g, newZone(t, "chaos", ratelimit.Rule{Window: time.Hour, Limit: ratelimit.MaxLimit})
}

// waitClosed polls until the breaker closes and returns how long it took.
func waitClosed(t *testing.T, g *guard.Guard, limit time.Duration) time.Duration {
	start := time.Now()
	for g.Stats().Open {
		if time.Since(start) > limit {
			t.Fatalf("the breaker stayed open for %v", limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// TestChaosRedisKilled: with the allow policy, killing Redis under load
// surfaces no error and no denial; the breaker stops requests from trying
// Redis after the first failures; a restarted Redis is used again once the
// probe (every 250 ms) sees it.
func TestChaosRedisKilled(t *testing.T) {
	t.Run("pooled", func(t *testing.T) { chaosKilled(t, false) })
	t.Run("pipelined", func(t *testing.T) { chaosKilled(t, true) })
}

func chaosKilled(t *testing.T, pipelined bool) {
	s := redistest.Start(t)
	const workers = 8
	g, z := chaosGuard(t, s.Addr(), 500*time.Millisecond, pipelined)
	l := startLoad(g, z, workers)
	defer l.end()
	before := l.phase(200 * time.Millisecond)
	s.Kill()
	during := l.phase(500 * time.Millisecond)
	st := g.Stats()
	if !st.Open {
		t.Fatal("the breaker did not open with Redis dead")
	}
	if st.Failures > 2*workers {
		t.Fatalf("%d requests tried the dead Redis; the breaker should stop them after about %d", st.Failures, workers)
	}
	s.Restart()
	recovery := waitClosed(t, g, 5*time.Second)
	callsBefore := atomic.LoadInt64(&l.calls)
	after := l.phase(200 * time.Millisecond)
	if atomic.LoadInt64(&l.calls) == callsBefore {
		t.Fatal("no calls after recovery: the load ended early")
	}
	if g.Stats().Failures != st.Failures {
		t.Fatalf("failures after recovery: %d, were %d", g.Stats().Failures, st.Failures)
	}
	if e, d := atomic.LoadInt64(&l.errs), atomic.LoadInt64(&l.denied); e != 0 || d != 0 {
		t.Fatalf("%d errors and %d denials surfaced with the allow policy", e, d)
	}
	if during > time.Second {
		t.Fatalf("slowest request during the outage took %v", during)
	}
	t.Logf("%d calls; slowest before %v, during outage %v, after %v; %d tried dead Redis; recovered %v after restart",
		atomic.LoadInt64(&l.calls), before, during, after, st.Failures, recovery)
}

// TestChaosSlowRedis: a Redis stuck in DEBUG SLEEP makes requests time out;
// the breaker opens, so the rest answer at once, and closes when Redis
// wakes up.
func TestChaosSlowRedis(t *testing.T) {
	t.Run("pooled", func(t *testing.T) { chaosSlow(t, false) })
	t.Run("pipelined", func(t *testing.T) { chaosSlow(t, true) })
}

func chaosSlow(t *testing.T, pipelined bool) {
	s := redistest.Start(t)
	g, z := chaosGuard(t, s.Addr(), 100*time.Millisecond, pipelined)
	admin := newClient(t, resp.Options{Addrs: []string{s.Addr()}, ReadTimeout: 5 * time.Second})
	ctx := context.Background()
	if _, err := admin.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	const workers = 4
	l := startLoad(g, z, workers)
	defer l.end()
	l.phase(100 * time.Millisecond)
	slept := make(chan error, 1)
	go func() {
		_, err := admin.Do(ctx, "DEBUG", "SLEEP", "1")
		slept <- err
	}()
	during := l.phase(600 * time.Millisecond)
	st := g.Stats()
	if !st.Open {
		t.Fatal("the breaker did not open with Redis asleep")
	}
	if st.Failures > 2*workers {
		t.Fatalf("%d requests waited on the sleeping Redis", st.Failures)
	}
	if err := <-slept; err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
	recovery := waitClosed(t, g, 5*time.Second)
	if e, d := atomic.LoadInt64(&l.errs), atomic.LoadInt64(&l.denied); e != 0 || d != 0 {
		t.Fatalf("%d errors and %d denials surfaced with the allow policy", e, d)
	}
	t.Logf("slowest request while Redis slept: %v (read timeout 100ms); %d timed out; closed %v after it woke",
		during, st.Failures, recovery)
}
