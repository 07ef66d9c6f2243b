package guard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// fakeRemote is a Store whose answers the test sets.
type fakeRemote struct {
	mu    sync.Mutex
	err   error
	deny  time.Duration // RetryAfter of denials; 0 allows
	calls int
}

func (f *fakeRemote) Take(_ context.Context, _ time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return false, f.err
	}
	for i := range items {
		out[i] = ratelimit.Decision{Allowed: f.deny == 0, Limit: 10, RetryAfter: f.deny, ResetAfter: 2 * f.deny}
	}
	return f.deny == 0, nil
}

func (f *fakeRemote) set(err error, deny time.Duration) {
	f.mu.Lock()
	f.err, f.deny = err, deny
	f.mu.Unlock()
}

func (f *fakeRemote) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func newGuard(t *testing.T, remote ratelimit.Store, opts Options) *Guard {
	t.Helper()
	g, err := New(remote, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

func TestParseFailurePolicy(t *testing.T) {
	for in, want := range map[string]FailurePolicy{"": FailAllow, "allow": FailAllow, "DENY": FailDeny, "local": FailLocal} {
		if got, err := ParseFailurePolicy(in); err != nil || got != want {
			t.Errorf("ParseFailurePolicy(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseFailurePolicy("open"); err == nil {
		t.Error("unknown policy accepted")
	}
	if _, err := New(&fakeRemote{}, Options{OnError: 7}); err == nil {
		t.Error("New accepted an unknown policy")
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New accepted no store")
	}
}

// TestGuardPolicies: a failing store is answered by the policy, and Take
// reports no error.
func TestGuardPolicies(t *testing.T) {
	z := newZone(t, "p", ratelimit.Rule{Window: time.Minute, Limit: 2})
	for _, tc := range []struct {
		policy FailurePolicy
		want   []bool // three requests on one key
	}{
		{FailAllow, []bool{true, true, true}},
		{FailDeny, []bool{false, false, false}},
		{FailLocal, []bool{true, true, false}},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			remote := &fakeRemote{err: errors.New("connection refused")}
			var logged []error
			g := newGuard(t, remote, Options{OnError: tc.policy, LogError: func(err error, _ int64) { logged = append(logged, err) }})
			for i, want := range tc.want {
				out := make([]ratelimit.Decision, 1)
				allowed, err := g.Take(context.Background(), epoch, []ratelimit.Item{{Zone: z, Key: "k" + tc.policy.String()}}, out)
				if err != nil || allowed != want || out[0].Allowed != want || out[0].Limit != 2 {
					t.Fatalf("request %d: %v %+v %v, want allowed %v", i, allowed, out[0], err, want)
				}
				if !want && out[0].RetryAfter <= 0 {
					t.Fatalf("request %d: denied with no RetryAfter", i)
				}
			}
			if len(logged) != 1 {
				t.Fatalf("%d errors logged, want 1 (rate-limited)", len(logged))
			}
		})
	}
}

// TestGuardBreaker: the first failure opens the breaker, requests then
// skip the store, and a successful probe closes it.
func TestGuardBreaker(t *testing.T) {
	z := newZone(t, "b", ratelimit.Rule{Window: time.Minute, Limit: 5})
	remote := &fakeRemote{err: errors.New("i/o timeout")}
	var up int32 // what the probe finds
	recovered := make(chan time.Duration, 1)
	g := newGuard(t, remote, Options{
		Probe: func(context.Context) error {
			if atomic.LoadInt32(&up) == 1 {
				return nil
			}
			return errors.New("still down")
		},
		ProbeInterval: time.Hour, // the test probes by hand
		LogRecovered:  func(d time.Duration) { recovered <- d },
	})
	out := make([]ratelimit.Decision, 1)
	items := []ratelimit.Item{{Zone: z, Key: "k"}}
	for i := 0; i < 10; i++ {
		g.Take(context.Background(), epoch, items, out)
	}
	if remote.count() != 1 {
		t.Fatalf("the store was asked %d times, want 1 (then the breaker opened)", remote.count())
	}
	st := g.Stats()
	if !st.Open || st.Failures != 1 || st.Fallbacks != 10 {
		t.Fatalf("stats %+v", st)
	}
	if g.breaker.probeOnce() {
		t.Fatal("a failing probe closed the breaker")
	}
	atomic.StoreInt32(&up, 1)
	remote.set(nil, 0)
	if !g.breaker.probeOnce() {
		t.Fatal("a good probe left the breaker open")
	}
	<-recovered
	if allowed, _ := g.Take(context.Background(), epoch, items, out); !allowed || remote.count() != 2 {
		t.Fatalf("after recovery: allowed %v, store asked %d times", allowed, remote.count())
	}
	// An abandoned request (canceled context) does not open the breaker.
	remote.set(errors.New("canceled"), 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Take(ctx, epoch, items, out)
	if g.Stats().Open {
		t.Fatal("a canceled request opened the breaker")
	}
}

// TestGuardDenyCache: a denial answers locally until its RetryAfter, then
// the store is asked again.
func TestGuardDenyCache(t *testing.T) {
	a := newZone(t, "a", ratelimit.Rule{Window: time.Minute, Limit: 10})
	b := newZone(t, "b", ratelimit.Rule{Window: time.Minute, Limit: 10})
	remote := &fakeRemote{deny: 3 * time.Second}
	g := newGuard(t, remote, Options{})
	out := make([]ratelimit.Decision, 2)
	items := []ratelimit.Item{{Zone: a, Key: "k"}, {Zone: b, Key: "k"}}
	g.Take(context.Background(), epoch, items, out)
	remote.set(nil, 0) // the store would allow now, but the denial stands
	for _, at := range []time.Duration{0, time.Second, 3*time.Second - 1} {
		allowed, _ := g.Take(context.Background(), epoch.Add(at), items[:1], out)
		if allowed || out[0].RetryAfter != 3*time.Second-at || out[0].ResetAfter != 6*time.Second-at {
			t.Fatalf("at +%v: allowed %v, %+v", at, allowed, out[0])
		}
	}
	if remote.count() != 1 || g.Stats().CacheHits != 3 {
		t.Fatalf("store asked %d times, %d cache hits; want 1 and 3", remote.count(), g.Stats().CacheHits)
	}
	// Another item of a request that includes a cached key: denied too,
	// the other item reported as not consulted.
	items2 := []ratelimit.Item{{Zone: b, Key: "other"}, {Zone: a, Key: "k"}}
	if allowed, _ := g.Take(context.Background(), epoch.Add(time.Second), items2, out); allowed || !out[0].Allowed || out[1].Allowed || ratelimit.Tightest(out) != 1 {
		t.Fatalf("multi-item cache hit: %v %+v", allowed, out)
	}
	if allowed, _ := g.Take(context.Background(), epoch.Add(3*time.Second), items[:1], out); !allowed || remote.count() != 2 {
		t.Fatalf("at RetryAfter: allowed %v, store asked %d times", allowed, remote.count())
	}
}

// TestDenyCacheBound: the cache never holds more than its size.
func TestDenyCacheBound(t *testing.T) {
	z := newZone(t, "z", ratelimit.Rule{Window: time.Minute, Limit: 10})
	c := newDenyCache(100, new(int64))
	out := []ratelimit.Decision{{Limit: 10, RetryAfter: time.Minute}}
	for i := 0; i < 1000; i++ {
		c.record(epoch, []ratelimit.Item{{Zone: z, Key: string(rune(i + 'A'))}}, out)
		if c.len() > 100 {
			t.Fatalf("cache holds %d entries, bound 100", c.len())
		}
	}
	if c.len() != 100 {
		t.Fatalf("cache holds %d entries, want 100 (full)", c.len())
	}
	// Expired entries make room first and are dropped on lookup.
	later := epoch.Add(2 * time.Minute)
	c.record(later, []ratelimit.Item{{Zone: z, Key: "new"}}, out)
	if !checkDenials(c, later, []ratelimit.Item{{Zone: z, Key: "new"}}, make([]ratelimit.Decision, 1)) {
		t.Fatal("the newest denial was not kept")
	}
}

func TestErrorLog(t *testing.T) {
	var calls []int64
	l := errorLog{emit: func(_ error, n int64) { calls = append(calls, n) }, interval: time.Minute}
	for i := 0; i < 5; i++ {
		l.report(errors.New("x"), epoch.Add(time.Duration(i)*time.Second))
	}
	l.report(errors.New("x"), epoch.Add(time.Minute))
	if len(calls) != 2 || calls[0] != 0 || calls[1] != 4 {
		t.Fatalf("calls %v, want [0 4]", calls)
	}
}

// TestGuardOverloaded: a store call the host did not send for its own
// backlog (ErrOverloaded) is decided by the policy, but the breaker stays
// closed, so the next request asks the store again; it is counted and
// logged apart, and a flood of it does not keep a real failure, which
// still opens the breaker, out of the log.
func TestGuardOverloaded(t *testing.T) {
	z := newZone(t, "o", ratelimit.Rule{Window: time.Minute, Limit: 2})
	busy := fmt.Errorf("pipeline: %w", ErrOverloaded)
	for _, tc := range []struct {
		policy FailurePolicy
		want   []bool // three requests on one key
	}{
		{FailAllow, []bool{true, true, true}},
		{FailDeny, []bool{false, false, false}},
		{FailLocal, []bool{true, true, false}},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			remote := &fakeRemote{err: busy}
			var logged []error
			g := newGuard(t, remote, Options{
				OnError:       tc.policy,
				Probe:         func(context.Context) error { return nil },
				ProbeInterval: time.Hour, // a probe would close the breaker
				LogError:      func(err error, _ int64) { logged = append(logged, err) },
			})
			items := []ratelimit.Item{{Zone: z, Key: "k"}}
			for i, want := range tc.want {
				out := make([]ratelimit.Decision, 1)
				allowed, err := g.Take(context.Background(), epoch, items, out)
				if err != nil || allowed != want || out[0].Allowed != want || out[0].Limit != 2 {
					t.Fatalf("request %d: %v %+v %v, want allowed %v", i, allowed, out[0], err, want)
				}
			}
			st := g.Stats()
			if st.Open || remote.count() != 3 {
				t.Fatalf("the breaker opened (%v) or requests skipped the store (asked %d times, want 3)", st.Open, remote.count())
			}
			if st.Overloaded != 3 || st.Fallbacks != 3 || st.Failures != 0 {
				t.Fatalf("stats %+v, want 3 overloaded, 3 fallbacks, no failure", st)
			}
			if len(logged) != 1 || !errors.Is(logged[0], ErrOverloaded) {
				t.Fatalf("logged %v, want the overload once", logged)
			}

			remote.set(errors.New("i/o timeout"), 0)
			g.Take(context.Background(), epoch, items, make([]ratelimit.Decision, 1))
			if st := g.Stats(); !st.Open || st.Failures != 1 || st.Overloaded != 3 {
				t.Fatalf("after a real failure: stats %+v, want the breaker open and 1 failure", st)
			}
			if len(logged) != 2 || errors.Is(logged[1], ErrOverloaded) {
				t.Fatalf("logged %v, want the failure after the overload", logged)
			}
		})
	}
}
