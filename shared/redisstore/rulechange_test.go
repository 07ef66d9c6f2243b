package redisstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestRedisAlgorithmChange pins what docs/redis.md promises when a zone kept in
// Redis changes its algorithm, for every pair: the bucket algorithms
// (sliding, strict, fixed) keep each other's counters when they have the
// same window and sub-window (fixed has one sub-window, the window), since
// they count the same sub-windows; any other change starts afresh. A
// change of limit or cost keeps the counters.
func TestRedisAlgorithmChange(t *testing.T) {
	rules := []struct {
		name string
		rule ratelimit.Rule
	}{
		{"sliding", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 10}},
		{"strict", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 10, Algorithm: ratelimit.Strict}},
		{"sliding-1", ratelimit.Rule{Window: time.Minute, SubWindow: time.Minute, Limit: 10}},
		{"strict-1", ratelimit.Rule{Window: time.Minute, SubWindow: time.Minute, Limit: 10, Algorithm: ratelimit.Strict}},
		{"fixed", ratelimit.Rule{Window: time.Minute, Limit: 10, Algorithm: ratelimit.Fixed}},
		{"log", ratelimit.Rule{Window: time.Minute, Limit: 10, Algorithm: ratelimit.Log}},
		{"sliding-limit-20", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 20}},
		{"sliding-cost-2", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 10, Cost: 2}},
	}
	// kept lists the changes that keep the counters, both ways.
	kept := map[[2]string]bool{}
	for _, group := range [][]string{
		{"sliding", "strict", "sliding-limit-20", "sliding-cost-2"},
		{"sliding-1", "strict-1", "fixed"},
	} {
		for _, a := range group {
			for _, b := range group {
				kept[[2]string{a, b}] = true
			}
		}
	}
	store, _ := newStore(t, miniredis.RunT(t).Addr())
	store.callerTime = true
	n := 0
	for _, from := range rules {
		for _, to := range rules {
			if from.name == to.name {
				continue
			}
			n++
			name := "change-" + strconv.Itoa(n)
			before := newZone(t, name, from.rule)
			for i := 0; i < 3; i++ {
				take1(t, store, epoch, before, "k")
			}
			after := newZone(t, name, to.rule)
			d := take1(t, store, epoch, after, "k")
			r := after.Rule()
			fresh := r.Limit - r.Cost
			keptLeft := r.Limit - 3*before.Rule().Cost - r.Cost
			switch want := kept[[2]string{from.name, to.name}]; {
			case !d.Allowed:
				t.Errorf("%s -> %s: %+v, want allowed", from.name, to.name, d)
			case want && d.Remaining != keptLeft:
				t.Errorf("%s -> %s: remaining %d, want %d (counters kept)", from.name, to.name, d.Remaining, keptLeft)
			case !want && d.Remaining != fresh:
				t.Errorf("%s -> %s: remaining %d, want %d (a fresh count)", from.name, to.name, d.Remaining, fresh)
			}
		}
	}
}

// TestRedisFixedToSlidingFirstWindow pins the one caveat of a kept count:
// fixed lets its key expire when its window ends, so after a change from
// fixed to sliding (same window and sub-window) the counts of the window
// in progress are gone in the next one, where sliding would still weigh
// them: that first window counts less.
func TestRedisFixedToSlidingFirstWindow(t *testing.T) {
	m := miniredis.RunT(t)
	store, _ := newStore(t, m.Addr())
	fixed := newZone(t, "f2s", ratelimit.Rule{Window: time.Minute, Limit: 10, Algorithm: ratelimit.Fixed})
	sliding := newZone(t, "f2s", ratelimit.Rule{Window: time.Minute, SubWindow: time.Minute, Limit: 10})
	start := time.Unix(1_760_000_040, 0) // a multiple of a minute
	m.SetTime(start.Add(50 * time.Second))
	for i := 0; i < 10; i++ {
		take1(t, store, time.Time{}, fixed, "k")
	}
	// Sliding, 1 s into the next window, in memory: the 10 of the last
	// window weigh 59/60 of 10, so it denies.
	mem := newZone(t, "f2s-memory", sliding.Rule())
	for i := 0; i < 10; i++ {
		ratelimit.TakeAt(mem, "k", start.Add(50*time.Second))
	}
	if d := ratelimit.TakeAt(mem, "k", start.Add(61*time.Second)); d.Allowed {
		t.Fatalf("memory: %+v, want denied", d)
	}
	m.FastForward(11 * time.Second)
	m.SetTime(start.Add(61 * time.Second))
	if d := take1(t, store, time.Time{}, sliding, "k"); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("redis after fixed -> sliding: %+v, want a fresh count (fixed's key expired)", d)
	}
}
