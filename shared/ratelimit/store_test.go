package ratelimit

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestConcurrentTakeAdmitsExactlyLimit(t *testing.T) {
	for _, alg := range []Algorithm{Sliding, Strict, Fixed, Log} {
		t.Run(alg.String(), func(t *testing.T) {
			z := newZone(t, "test", Rule{Window: time.Minute, Limit: 1000, Algorithm: alg}, Options{})
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 500; i++ {
						if TakeAt(z, "hot", start).Allowed {
							admitted.Add(1)
						}
						TakeAt(z, "cold-"+strconv.Itoa(i), start) // other shards, at the same time
					}
				}()
			}
			wg.Wait()
			if got := admitted.Load(); got != 1000 {
				t.Fatalf("admitted %d of 4000 concurrent requests, want 1000", got)
			}
		})
	}
}

func TestTakeAllConsumesOnlyIfAllAllow(t *testing.T) {
	minute := newZone(t, "test", Rule{Window: time.Minute, Limit: 1, Algorithm: Strict}, Options{})
	hour := newZone(t, "test", Rule{Window: time.Hour, Limit: 5, Algorithm: Strict}, Options{})
	day := newZone(t, "test", Rule{Window: 24 * time.Hour, Limit: 10, Algorithm: Strict}, Options{})
	items := []Item{{Zone: minute, Key: "+15550100"}, {Zone: hour, Key: "+15550100"}, {Zone: day, Key: "+15550100"}}
	out := make([]Decision, len(items))

	if ok, err := (Memory{}).Take(context.Background(), start, items, out); !ok || err != nil {
		t.Fatalf("first code: allowed=%v err=%v", ok, err)
	}
	// Within the minute: denied by the minute rule alone.
	if TakeAll(start.Add(time.Second), items, out) {
		t.Fatal("second code within a minute was allowed")
	}
	if out[0].Allowed || !out[1].Allowed || !out[2].Allowed {
		t.Fatalf("decisions %+v, want only the minute rule to deny", out)
	}
	if i := Tightest(out); i != 0 {
		t.Fatalf("Tightest = %d, want the minute rule", i)
	}
	// The denial consumed nothing: the hour rule still has 4 left.
	if !TakeAll(start.Add(2*time.Minute), items, out) || out[1].Remaining != 3 {
		t.Fatalf("after the minute: %+v, want allowed with 3 left in the hour", out)
	}
}

// TestTakeAllNoDeadlock takes overlapping zone sets in opposite orders
// from many goroutines; locks are taken in one global order, so it ends.
func TestTakeAllNoDeadlock(t *testing.T) {
	a := newZone(t, "test", Rule{Window: time.Minute, Limit: 1 << 20}, Options{})
	b := newZone(t, "test", Rule{Window: time.Minute, Limit: 1 << 20}, Options{})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			items := []Item{{Zone: a, Key: "x"}, {Zone: b, Key: "x"}}
			if g%2 == 1 {
				items[0], items[1] = items[1], items[0]
			}
			out := make([]Decision, 2)
			for i := 0; i < 2000; i++ {
				TakeAll(start, items, out)
			}
		}(g)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("TakeAll deadlocked")
	}
	if d := TakeAt(a, "x", start); d.Remaining != 1<<20-16001 {
		t.Fatalf("zone a counted %d requests, want 16000", 1<<20-1-d.Remaining)
	}
}

func TestTightest(t *testing.T) {
	ds := []Decision{
		{Allowed: true, Remaining: 5},
		{Allowed: true, Remaining: 2},
		{RetryAfter: time.Second},
		{RetryAfter: time.Minute},
	}
	if got := Tightest(ds); got != 3 {
		t.Errorf("Tightest = %d, want the longest denial", got)
	}
	if got := Tightest(ds[:2]); got != 1 {
		t.Errorf("Tightest = %d, want the fewest remaining", got)
	}
	if got := Tightest(nil); got != -1 {
		t.Errorf("Tightest(nil) = %d", got)
	}
}

// TestMaxKeysUnderFlood sends a flood of distinct keys: the zone never
// tracks more than MaxKeys, and a key that is in use survives it when the
// flood's keys are older.
func TestMaxKeysUnderFlood(t *testing.T) {
	for _, alg := range []Algorithm{Sliding, Log} {
		t.Run(alg.String(), func(t *testing.T) {
			const maxKeys = 5000
			z := newZone(t, "test", Rule{Window: time.Minute, Limit: 3, Algorithm: alg}, Options{MaxKeys: maxKeys})
			flood := 50 * maxKeys
			if raceEnabled {
				flood = 10 * maxKeys
			}
			for i := 0; i < flood; i++ {
				TakeAt(z, "flood-"+strconv.Itoa(i), start.Add(time.Duration(i)*time.Microsecond))
				if i%1000 == 0 && z.Len() > maxKeys {
					t.Fatalf("tracking %d keys after %d distinct ones, max %d", z.Len(), i+1, maxKeys)
				}
			}
			if n := z.Len(); n > maxKeys || n < maxKeys*9/10 {
				t.Fatalf("tracking %d keys, want at most %d and close to it", n, maxKeys)
			}
		})
	}
}

func TestEvictionPrefersExpiredKeys(t *testing.T) {
	z := newZone(t, "test", Rule{Window: time.Second, Limit: 1, Algorithm: Strict}, Options{MaxKeys: 100})
	for i := 0; i < 100; i++ {
		TakeAt(z, "old-"+strconv.Itoa(i), start)
	}
	// A minute later every old key is expired; new keys replace them and
	// nothing live is lost.
	later := start.Add(time.Minute)
	for i := 0; i < 100; i++ {
		if !TakeAt(z, "new-"+strconv.Itoa(i), later).Allowed {
			t.Fatal("a new key was denied")
		}
	}
	for i := 0; i < 100; i++ {
		if TakeAt(z, "new-"+strconv.Itoa(i), later).Allowed {
			t.Fatalf("new-%d was evicted while live: its second request passed", i)
		}
	}
}

func TestSweepRemovesIdleKeys(t *testing.T) {
	for _, alg := range []Algorithm{Sliding, Fixed, Log} {
		t.Run(alg.String(), func(t *testing.T) {
			z := newZone(t, "test", Rule{Window: 10 * time.Second, Limit: 5, Algorithm: alg}, Options{})
			for i := 0; i < 100; i++ {
				TakeAt(z, strconv.Itoa(i), start)
			}
			TakeAt(z, "recent", start.Add(11*time.Second))
			if n := z.sweepAll(start.Add(5 * time.Second)); n != 0 {
				t.Fatalf("swept %d keys whose window is not over", n)
			}
			if n := z.sweepAll(start.Add(12 * time.Second)); n != 100 {
				t.Fatalf("swept %d keys, want the 100 idle ones", n)
			}
			if z.Len() != 1 {
				t.Fatalf("%d keys left, want 1", z.Len())
			}
			// A swept key starts afresh; slots are reused.
			if d := TakeAt(z, "7", start.Add(12*time.Second)); !d.Allowed || d.Remaining != 4 {
				t.Fatalf("reused slot: %+v", d)
			}
		})
	}
}

func TestSweeperRunsAndStops(t *testing.T) {
	before := runtime.NumGoroutine()
	var now atomic.Int64
	now.Store(start.UnixNano())
	z, err := NewZone("sweep", Rule{Window: time.Second, Limit: 5}, Options{
		SweepInterval: MinSweepInterval,
		Now:           func() time.Time { return time.Unix(0, now.Load()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	TakeAt(z, "k", start)
	now.Store(start.Add(time.Hour).UnixNano())
	deadline := time.Now().Add(10 * time.Second)
	for z.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not remove the idle key")
		}
		time.Sleep(time.Millisecond)
	}
	z.Close()
	z.Close() // idempotent
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}
