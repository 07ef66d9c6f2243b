package caddymodule

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// pipelinedStore returns a store over a runner whose pipeliner the test
// can read.
func pipelinedStore(t *testing.T, c redis.UniversalClient, cluster bool) (*ratelimit.RedisStore, *goRedisRunner) {
	t.Helper()
	r := newGoRedisRunner(c)
	t.Cleanup(func() { r.Close() })
	s, err := ratelimit.NewRedisStore(r, ratelimit.RedisOptions{KeyPrefix: "pl:", Cluster: cluster})
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
	const callers = 16 * defaultPipelines * maxPipelineLen
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
