package inflight

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// redisLimiter returns a Limiter of zone "api" over the Redis at addr.
func redisLimiter(t *testing.T, addr string, ttl time.Duration) *Limiter {
	t.Helper()
	c, err := resp.New(resp.Options{Addrs: []string{addr}, ReadTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	slots, err := redisstore.NewSlots(c, "t:")
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Options{Zone: "api", Remote: slots, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// TestLimiterFleet: two instances on one Redis hold at most n of a key
// together; a long request keeps its slot past the TTL because its holder
// renews it; a release lets the other instance in at once.
func TestLimiterFleet(t *testing.T) {
	addr := redistest.Start(t).Addr()
	a, b := redisLimiter(t, addr, time.Second), redisLimiter(t, addr, time.Second)
	ctx := context.Background()
	var slots []Slot
	for i, l := range []*Limiter{a, b, a} {
		s, held, ok := l.Take(ctx, "k", 3, time.Now())
		if !ok || held != int64(i+1) {
			t.Fatalf("take %d: ok %v held %d", i+1, ok, held)
		}
		slots = append(slots, s)
	}
	deadline := time.Now().Add(2500 * time.Millisecond) // past two TTLs
	for time.Now().Before(deadline) {
		if _, held, ok := b.Take(ctx, "k", 3, time.Now()); ok || held != 3 {
			t.Fatalf("a 4th slot across the fleet after %v: ok %v held %d", time.Until(deadline), ok, held)
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.Release(slots[0])
	waitFor(t, time.Second, func() bool {
		s, _, ok := b.Take(ctx, "k", 3, time.Now())
		if ok {
			b.Release(s)
		}
		return ok
	})
	if a.Held() != 1 || b.Held() != 1 {
		t.Fatalf("slots held here: a %d, b %d; want 1 and 1", a.Held(), b.Held())
	}
}

// TestLimiterHolderDies: the slots of a holder that stops renewing them
// (its process killed) keep the key refused until the TTL has passed,
// then it is served.
func TestLimiterHolderDies(t *testing.T) {
	addr := redistest.Start(t).Addr()
	const ttl = 1200 * time.Millisecond
	dead, live := redisLimiter(t, addr, ttl), redisLimiter(t, addr, ttl)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, _, ok := dead.Take(ctx, "k", 3, time.Now()); !ok {
			t.Fatal("refused below n")
		}
	}
	died := time.Now()
	close(dead.hold.stop) // killed: no renewal, no release
	var served time.Duration
	waitFor(t, 3*ttl, func() bool {
		s, _, ok := live.Take(ctx, "k", 3, time.Now())
		if ok {
			served = time.Since(died)
			live.Release(s)
		}
		return ok
	})
	if served < ttl-100*time.Millisecond {
		t.Fatalf("served %v after the holder died, before the TTL of %v", served, ttl)
	}
	t.Logf("served %v after the holder died (TTL %v)", served, ttl)
}

// TestLimiterResetForgotten: after an operator's reset, the holder's
// renewal finds its slots gone and forgets them.
func TestLimiterResetForgotten(t *testing.T) {
	addr := redistest.Start(t).Addr()
	l := redisLimiter(t, addr, time.Second)
	ctx := context.Background()
	l.Take(ctx, "k", 3, time.Now())
	if n, err := l.Reset(ctx, "k"); err != nil || n != 1 {
		t.Fatalf("reset: %d %v", n, err)
	}
	waitFor(t, 2*time.Second, func() bool {
		l.hold.mu.Lock()
		defer l.hold.mu.Unlock()
		return len(l.hold.sets) == 0
	})
}

// failing is a Remote whose takes fail.
type failing struct{ Remote }

func (f failing) Key(zone, key string) string { return zone + ":" + key }
func (f failing) Take(context.Context, string, int64, time.Duration) (string, int64, error) {
	return "", 0, errors.New("connection refused")
}

// TestLimiterFailurePolicy: with Redis failing, allow admits without a
// slot, deny refuses, local holds n per instance in memory.
func TestLimiterFailurePolicy(t *testing.T) {
	for _, c := range []struct {
		policy guard.FailurePolicy
		want   int // of 5 requests of one key held at once
	}{{guard.FailAllow, 5}, {guard.FailDeny, 0}, {guard.FailLocal, 3}} {
		t.Run(c.policy.String(), func(t *testing.T) {
			l, err := New(Options{Zone: "api", Remote: failing{}, OnError: c.policy})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			got := 0
			for i := 0; i < 5; i++ {
				if _, _, ok := l.Take(context.Background(), "k", 3, time.Now()); ok {
					got++
				}
			}
			if got != c.want {
				t.Fatalf("admitted %d of 5, want %d", got, c.want)
			}
		})
	}
}

// blocked is a Remote whose Release waits for unblock.
type blocked struct {
	Remote
	unblock  chan struct{}
	mu       sync.Mutex
	n        int
	released int
}

func (b *blocked) Key(zone, key string) string { return zone + ":" + key }
func (b *blocked) Take(context.Context, string, int64, time.Duration) (string, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	return "m" + string(rune('a'+b.n)), 1, nil
}
func (b *blocked) Release(ctx context.Context, set string, members ...string) error {
	select {
	case <-b.unblock:
	case <-ctx.Done():
		return ctx.Err()
	}
	b.mu.Lock()
	b.released += len(members)
	b.mu.Unlock()
	return nil
}

func (b *blocked) releasedN() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.released
}

// TestLimiterReleaseNeverWaits: releases return at once while Redis hangs,
// past the queue too (they wait in the overflow), so the response is
// never held by one; once Redis answers, every one is sent. Past the
// overflow's bound they are dropped, logged once, and left to the TTL.
func TestLimiterReleaseNeverWaits(t *testing.T) {
	for _, c := range []struct {
		name     string
		overflow int
		dropped  int
	}{
		{"within the overflow", 65536, 0},
		{"past the overflow", 100, hungReleases - releaseQueue - releaseWorkers - 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func(max int) { overflowMax = max }(overflowMax)
			overflowMax = c.overflow
			r := &blocked{unblock: make(chan struct{})}
			var logged []error
			var logMu sync.Mutex
			l, err := New(Options{Zone: "api", Remote: r, LogError: func(err error) {
				logMu.Lock()
				logged = append(logged, err)
				logMu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			// Every worker holds a batch of one in the hung call before
			// the queue fills: the rest wait in the queue and past it.
			start := time.Now()
			for i := 0; i < hungReleases; i++ {
				s, _, ok := l.Take(context.Background(), "k", hungReleases, time.Now())
				if !ok {
					t.Fatal("refused")
				}
				l.Release(s)
				if i < releaseWorkers {
					time.Sleep(20 * time.Millisecond) // a worker takes it alone
				}
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("%d releases with Redis hanging took %v", hungReleases, d)
			}
			if l.Held() != 0 {
				t.Fatalf("held %d after every release", l.Held())
			}
			l.hold.mu.Lock()
			dropped := l.hold.dropped
			l.hold.mu.Unlock()
			if int(dropped) != c.dropped {
				t.Fatalf("%d releases dropped, want %d", dropped, c.dropped)
			}
			close(r.unblock)
			waitFor(t, 5*time.Second, func() bool { return r.releasedN() == hungReleases-c.dropped })
			logMu.Lock()
			defer logMu.Unlock()
			if want := min(c.dropped, 1); len(logged) != want {
				t.Fatalf("logged %d errors (%v), want %d", len(logged), logged, want)
			}
		})
	}
}

// hungReleases is how many releases TestLimiterReleaseNeverWaits sends: past the
// queue.
const hungReleases = releaseQueue + 1000

// waitFor polls cond until it holds or within passes.
func waitFor(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
