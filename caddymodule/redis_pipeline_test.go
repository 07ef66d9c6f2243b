package caddymodule

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// pipelinedStore returns a store over a runner whose pipeliner the test
// can read.
func pipelinedStore(t *testing.T, c redis.UniversalClient, cluster bool) (*redisstore.Store, *goRedisRunner) {
	t.Helper()
	r := newGoRedisRunner(c)
	t.Cleanup(func() { r.Close() })
	s, err := redisstore.New(r, redisstore.Settings{KeyPrefix: "pl:", Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// takeConcurrently has workers goroutines take perWorker times each, the
// worker w on the key keys[w%len(keys)], and returns how many each key
// admitted; any error fails the test.
func takeConcurrently(t *testing.T, s ratelimit.Store, z *ratelimit.Zone, keys []string, workers, perWorker int) map[string]int64 {
	t.Helper()
	admitted := make([]int64, len(keys))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			out := make([]ratelimit.Decision, 1)
			items := []ratelimit.Item{{Zone: z, Key: keys[k]}}
			for j := 0; j < perWorker; j++ {
				ok, err := s.Take(context.Background(), time.Now(), items, out)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					atomic.AddInt64(&admitted[k], 1)
				}
			}
		}(w % len(keys))
	}
	wg.Wait()
	m := make(map[string]int64, len(keys))
	for i, k := range keys {
		m[k] = admitted[i]
	}
	return m
}

// TestPipelinedCallsExact: concurrent requests share pipelines, and each
// gets its own decision: on 8 keys hammered by 32 goroutines, each key
// admits exactly its limit. After SCRIPT FLUSH every call of the next
// pipelines gets NOSCRIPT and is sent again with EVAL.
func TestPipelinedCallsExact(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	s, r := pipelinedStore(t, c, false)
	z := testZone(t, "pipe", ratelimit.Rule{Window: time.Hour, SubWindow: 6 * time.Minute, Limit: 60})
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for k, n := range takeConcurrently(t, s, z, keys, 32, 30) { // 120 attempts a key
		if n != 60 {
			t.Errorf("key %s admitted %d, want exactly 60", k, n)
		}
	}
	calls := uint64(32 * 30)
	if p := r.pipe.pipelines.Load(); p >= calls {
		t.Errorf("%d pipelines for %d concurrent calls: none was shared", p, calls)
	} else {
		t.Logf("%d calls in %d pipelines", calls, p)
	}

	if err := c.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	before := redistest.Calls(t, srv.Addr())["eval"]
	fresh := make([]string, 16)
	for i := range fresh {
		fresh[i] = "fresh" + strconv.Itoa(i)
	}
	for k, n := range takeConcurrently(t, s, z, fresh, 32, 2) { // 4 attempts a key
		if n != 4 {
			t.Errorf("after SCRIPT FLUSH, key %s admitted %d, want 4", k, n)
		}
	}
	if evals := redistest.Calls(t, srv.Addr())["eval"] - before; evals == 0 {
		t.Error("after SCRIPT FLUSH no call was sent again with EVAL")
	}
}

// TestPipelinedCallersShareTheNext: the callers a pipeline answers, and
// whatever else is runnable, queue their next calls before the next
// pipeline goes out (loop's yield), so that callers in lockstep share one
// pipeline a round instead of trickling out in short ones. One processor
// makes the schedule the same on every machine.
func TestPipelinedCallersShareTheNext(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	s, r := pipelinedStore(t, c, false)
	z := testZone(t, "share", ratelimit.Rule{Window: time.Hour, Limit: ratelimit.MaxLimit})
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = "caller-" + strconv.Itoa(i)
	}
	takeConcurrently(t, s, z, keys, len(keys), 1) // the script loaded, a connection dialled
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const rounds = 50
	before := r.pipe.pipelines.Load()
	takeConcurrently(t, s, z, keys, len(keys), rounds)
	n := r.pipe.pipelines.Load() - before
	t.Logf("%d calls in %d pipelines", len(keys)*rounds, n)
	// About one round in six splits in two: every 61st time, the
	// scheduler runs the yielding loop before the callers it answered.
	// Without the yield, most rounds split (100 to 113 pipelines here).
	if n > rounds*3/2 {
		t.Errorf("%d callers in lockstep for %d rounds took %d pipelines, want about one a round", len(keys), rounds, n)
	}
}

// TestPipelinedCluster: a ClusterClient's pipeline sends each call to the
// node of its key; keys of many slots, hammered at once, each admit
// exactly their limit.
func TestPipelinedCluster(t *testing.T) {
	addrs := redistest.Cluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	s, _ := pipelinedStore(t, c, true)
	z := testZone(t, "pipe", ratelimit.Rule{Window: time.Hour, SubWindow: 6 * time.Minute, Limit: 20})
	keys := make([]string, 12)
	for i := range keys {
		keys[i] = "node-spread-" + strconv.Itoa(i)
	}
	for k, n := range takeConcurrently(t, s, z, keys, 24, 20) { // 40 attempts a key
		if n != 20 {
			t.Errorf("key %s admitted %d, want exactly 20", k, n)
		}
	}
}

// TestPipelinedRedisKilled: Redis killed under concurrent load fails every
// call within the pipeline's bound, none hangs, and the calls succeed
// again once Redis is back (with the script sent again: the new server
// has none).
func TestPipelinedRedisKilled(t *testing.T) {
	srv := redistest.Start(t)
	const timeout = 200 * time.Millisecond
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: 1})
	s, r := pipelinedStore(t, c, false)
	if r.pipe.timeout != 3*timeout {
		t.Fatalf("pipeline bound %v, want dial + write + read = %v", r.pipe.timeout, 3*timeout)
	}
	z := testZone(t, "kill", ratelimit.Rule{Window: time.Hour, Limit: ratelimit.MaxLimit})

	var stop atomic.Bool
	var ok, failed, slowest atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			out := make([]ratelimit.Decision, 1)
			items := []ratelimit.Item{{Zone: z, Key: "k" + strconv.Itoa(w)}}
			for !stop.Load() {
				start := time.Now()
				_, err := s.Take(context.Background(), start, items, out)
				if d := int64(time.Since(start)); d > slowest.Load() {
					slowest.Store(d) // racy max; good enough for a bound
				}
				if err != nil {
					failed.Add(1)
				} else {
					ok.Add(1)
				}
			}
		}(w)
	}
	for ok.Load() < 200 {
		time.Sleep(time.Millisecond)
	}
	srv.Kill()
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if failed.Load() == 0 {
		t.Fatal("no call failed with Redis dead")
	}
	// Queued behind the pipelines in flight, then its own: two bounds,
	// and scheduling slack.
	if d := time.Duration(slowest.Load()); d > 2*r.pipe.timeout+time.Second {
		t.Errorf("a call took %v with Redis dead, want at most about %v", d, 2*r.pipe.timeout)
	}

	srv.Restart()
	out := make([]ratelimit.Decision, 1)
	var err error
	for try := 0; try < 50; try++ {
		if _, err = s.Take(context.Background(), time.Now(), []ratelimit.Item{{Zone: z, Key: "back"}}, out); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || !out[0].Allowed || out[0].ResetAfter == 0 {
		t.Fatalf("after the restart: %+v, %v", out[0], err)
	}
}

// TestPipelinedSlowRedis: while Redis is stalled (DEBUG SLEEP), a call
// ends with its context, and one without a deadline with the read
// timeout, not when Redis answers.
func TestPipelinedSlowRedis(t *testing.T) {
	srv := redistest.Start(t)
	const timeout = 150 * time.Millisecond
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: 1})
	s, _ := pipelinedStore(t, c, false)
	z := testZone(t, "slow", ratelimit.Rule{Window: time.Hour, Limit: 10})
	items := []ratelimit.Item{{Zone: z, Key: "k"}}
	out := make([]ratelimit.Decision, 1)
	if _, err := s.Take(context.Background(), time.Now(), items, out); err != nil {
		t.Fatal(err)
	}

	sleeper := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 10 * time.Second})
	defer sleeper.Close()
	slept := make(chan error, 1)
	go func() { slept <- sleeper.Do(context.Background(), "debug", "sleep", "3").Err() }()
	time.Sleep(100 * time.Millisecond) // let DEBUG SLEEP start

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Take(ctx, time.Now(), items, out)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call whose context ends: %v, want %v", err, context.DeadlineExceeded)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a call whose context ends after 50ms took %v", d)
	}
	start = time.Now()
	if _, err := s.Take(context.Background(), time.Now(), items, out); err == nil {
		t.Error("a call to a stalled Redis succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a call without a deadline took %v with Redis stalled for 3s; want the pipeline's bound, %v", d, 3*timeout)
	}
	if err := <-slept; err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
}

// TestPipelinedBacklogBound: with Redis stalled, calls queued behind more
// than the pipelines in flight can take still end within the bound of
// two pipelines (those in flight, then their own), rather than one
// pipeline timeout per round of the backlog before them.
func TestPipelinedBacklogBound(t *testing.T) {
	srv := redistest.Start(t)
	const timeout = 100 * time.Millisecond
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: 1})
	s, r := pipelinedStore(t, c, false)
	z := testZone(t, "backlog", ratelimit.Rule{Window: time.Hour, Limit: ratelimit.MaxLimit})
	items := []ratelimit.Item{{Zone: z, Key: "k"}}
	if _, err := s.Take(context.Background(), time.Now(), items, make([]ratelimit.Decision, 1)); err != nil {
		t.Fatal(err)
	}

	sleeper := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 10 * time.Second})
	defer sleeper.Close()
	slept := make(chan error, 1)
	go func() { slept <- sleeper.Do(context.Background(), "debug", "sleep", "5").Err() }()
	time.Sleep(100 * time.Millisecond) // let DEBUG SLEEP start

	// Far more callers than the pipelines in flight take: a burst of
	// requests on a busy proxy.
	const callers = 32 * maxPipelineLen // 4,096
	var slowest atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			s.Take(context.Background(), start, items, make([]ratelimit.Decision, 1))
			if d := int64(time.Since(start)); d > slowest.Load() {
				slowest.Store(d) // racy max; good enough for a bound
			}
		}()
	}
	wg.Wait()
	// Two bounds, and scheduling slack for thousands of goroutines.
	if d := time.Duration(slowest.Load()); d > 2*r.pipe.timeout+time.Second {
		t.Errorf("a call took %v with Redis stalled, want at most about %v", d, 2*r.pipe.timeout)
	}
	if err := <-slept; err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
}

// TestPipelinedBacklogKeepsBreakerClosed: calls failed unsent because
// they waited too long for a free pipeline are this instance's load, not
// a Redis failure. on_store_error decides them, the breaker stays closed,
// and they are counted and logged as such. The pipeline's bound is
// shortened below one stall of Redis that the client's own timeouts
// outlast: the pipelines in flight are answered late but answered, and
// every call queued behind them is late. The connections are dialled
// beforehand: a dial is bounded by the pipeline's context, which a busy
// machine could let pass, and that would be a real failure.
func TestPipelinedBacklogKeepsBreakerClosed(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		MaxRetries: 1, MinIdleConns: 2 * defaultPipelines})
	r := newGoRedisRunner(c)
	r.pipe.timeout = 200 * time.Millisecond
	for deadline := time.Now().Add(5 * time.Second); c.PoolStats().IdleConns < 2*defaultPipelines; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			r.Close()
			t.Fatalf("pool %+v: the idle connections were not dialled", c.PoolStats())
		}
	}
	store, err := redisstore.New(r, redisstore.Settings{KeyPrefix: "pl:"})
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.WarnLevel)
	setup := &redisSetup{opts: redis.UniversalOptions{Addrs: []string{srv.Addr()}}}
	g, err := guard.NewLogged(store, guard.Options{OnError: guard.FailDeny, Store: "redis", NotCounted: redisstore.ErrOutOfMemory}, guardLog(zap.New(core), setup))
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	// In the pool, where the metrics find every guard.
	const poolKey = "test: pipelined backlog"
	if _, _, err := redisStores.LoadOrNew(poolKey, func() (caddy.Destructor, error) {
		return &pooledRedis{runner: r, guard: g}, nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { releaseRedis(poolKey) })
	reg := prometheus.NewRegistry()
	if _, err := registerMetrics(reg); err != nil {
		t.Fatal(err)
	}
	before := storeMetric(t, reg, "caddy_http_rate_limit_store_overloaded_total")

	z := testZone(t, "backlog", ratelimit.Rule{Window: time.Hour, Limit: ratelimit.MaxLimit})
	items := []ratelimit.Item{{Zone: z, Key: "k"}}
	if ok, _ := g.Take(context.Background(), time.Now(), items, make([]ratelimit.Decision, 1)); !ok {
		t.Fatal("the first call was not admitted")
	}

	sleeper := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 10 * time.Second})
	defer sleeper.Close()
	slept := make(chan error, 1)
	go func() { slept <- sleeper.Do(context.Background(), "debug", "sleep", "1").Err() }()
	time.Sleep(100 * time.Millisecond) // let DEBUG SLEEP start

	const callers = 8 * maxPipelineLen
	var denied atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]ratelimit.Decision, 1)
			if ok, _ := g.Take(context.Background(), time.Now(), items, out); !ok {
				if out[0].RetryAfter != guard.DenyRetryAfter {
					t.Errorf("a denial with RetryAfter %v, want on_store_error deny's %v", out[0].RetryAfter, guard.DenyRetryAfter)
				}
				denied.Add(1)
			}
		}()
	}
	wg.Wait()
	if err := <-slept; err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
	st := g.Stats()
	if st.Open || st.Failures != 0 {
		t.Fatalf("stats %+v after a backlog: want the breaker closed and no failures; log %+v", st, logs.All())
	}
	if denied.Load() == 0 {
		t.Fatal("no call was late: the backlog was not provoked")
	}
	if st.Overloaded != uint64(denied.Load()) || st.Fallbacks != st.Overloaded {
		t.Errorf("stats %+v, want %d overloaded calls, each a fallback", st, denied.Load())
	}
	if got := storeMetric(t, reg, "caddy_http_rate_limit_store_overloaded_total") - before; got != float64(st.Overloaded) {
		t.Errorf("caddy_http_rate_limit_store_overloaded_total grew by %v, want %d", got, st.Overloaded)
	}
	lines := logs.FilterMessageSnippet("waited too long").All()
	if len(lines) != 1 || lines[0].ContextMap()["on_store_error"] != "deny" || logs.Len() != 1 {
		t.Errorf("log %+v, want one line about the backlog naming on_store_error deny", logs.All())
	}
}

// storeMetric returns the value of the store counter name in reg.
func storeMetric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
