package ratelimit

import (
	"math/rand"
	"testing"
	"time"
)

// TestAgainstReference replays random traces through a zone and through the
// reference, for every algorithm, and requires the same decision,
// Remaining and RetryAfter on every request.
func TestAgainstReference(t *testing.T) {
	rules := []Rule{
		{Window: 10 * time.Second, SubWindow: time.Second, Limit: 20},
		{Window: 10 * time.Second, SubWindow: 2 * time.Second, Limit: 7, Cost: 2},
		{Window: 3 * time.Second, SubWindow: 3 * time.Second, Limit: 4},
		{Window: 10 * time.Second, SubWindow: time.Second, Limit: 20, Algorithm: Strict},
		{Window: 6 * time.Second, SubWindow: 500 * time.Millisecond, Limit: 9, Algorithm: Strict, Cost: 3},
		{Window: 10 * time.Second, Limit: 20, Algorithm: Fixed},
		{Window: 10 * time.Second, Limit: 20, Algorithm: Log},
		{Window: 5 * time.Second, Limit: 6, Algorithm: Log, Cost: 2},
	}
	for _, rule := range rules {
		rule := rule
		for seed := int64(1); seed <= 4; seed++ {
			rng := rand.New(rand.NewSource(seed))
			z := newZone(t, "test", rule, Options{})
			ref := newReference(rule)
			// Rates from a third of the limit to four times it, with bursts.
			rate := float64(rule.Limit) / rule.Window.Seconds() * (0.3 + rng.Float64()*3.7)
			times := trace(rng, start.UnixNano(), 3000, rate, 1+int(seed%3)*3)
			var pending time.Duration // RetryAfter of the last denial since the last admission
			var deniedAt int64
			for i, at := range times {
				got := TakeAt(z, "k", time.Unix(0, at))
				allowed, remaining := ref.take(at)
				if got.Allowed != allowed || got.Remaining != remaining {
					t.Fatalf("%v seed %d request %d at +%v: zone %+v, reference allowed=%v remaining=%d",
						rule, seed, i, time.Duration(at-start.UnixNano()), got, allowed, remaining)
				}
				if pending > 0 && got.Allowed != (at >= deniedAt+int64(pending)) {
					t.Fatalf("%v seed %d request %d: allowed=%v at +%v after a denial that said retry after %v",
						rule, seed, i, got.Allowed, time.Duration(at-deniedAt), pending)
				}
				if got.Allowed {
					pending = 0
					continue
				}
				want := ref.earliest(at) - at
				if int64(got.RetryAfter) != want {
					t.Fatalf("%v seed %d request %d: RetryAfter %v, reference %v", rule, seed, i, got.RetryAfter, time.Duration(want))
				}
				pending, deniedAt = got.RetryAfter, at
			}
		}
	}
}

// TestStrictNeverExceedsLimit checks the guarantee Strict is named for:
// never more than N admitted in any interval of length W, under any trace.
func TestStrictNeverExceedsLimit(t *testing.T) {
	for _, alg := range []Algorithm{Strict, Log} {
		for seed := int64(1); seed <= 20; seed++ {
			rng := rand.New(rand.NewSource(seed))
			rule := Rule{Window: time.Second, SubWindow: 100 * time.Millisecond, Limit: int64(1 + rng.Intn(50)), Algorithm: alg}
			if alg == Log {
				rule.SubWindow = 0
			}
			z := newZone(t, "test", rule, Options{})
			rate := float64(rule.Limit) * (1 + rng.Float64()*5)
			var admitted []int64
			for _, at := range trace(rng, start.UnixNano(), 5000, rate, 1+rng.Intn(8)) {
				if TakeAt(z, "k", time.Unix(0, at)).Allowed {
					admitted = append(admitted, at)
				}
			}
			if got := maxInWindow(admitted, int64(rule.Window)); got > int(rule.Limit) {
				t.Fatalf("%v seed %d: admitted %d in one window, limit %d", alg, seed, got, rule.Limit)
			}
		}
	}
}

// TestBoundaryAttack sends N requests at the very end of a sub-window and
// N at the start of the window after: the attack that doubles a fixed
// window. It asserts the most admitted in any interval of length W.
func TestBoundaryAttack(t *testing.T) {
	const n = 100
	tests := []struct {
		alg     Algorithm
		maxSeen int
	}{
		{Fixed, 2 * n}, // the known weakness of fixed windows
		{Sliding, n},   // the first burst is still inside the window, counted whole
		{Strict, n},    // guaranteed
		{Log, n},       // exact
	}
	for _, tt := range tests {
		t.Run(tt.alg.String(), func(t *testing.T) {
			rule := Rule{Window: 10 * time.Second, Limit: n, Algorithm: tt.alg}
			z := newZone(t, "test", rule, Options{})
			var admitted []int64
			end := start.Add(10*time.Second - time.Millisecond) // last ms of the first window
			for _, at := range []time.Time{end, end.Add(2 * time.Millisecond)} {
				for i := 0; i < n; i++ {
					if TakeAt(z, "k", at).Allowed {
						admitted = append(admitted, at.UnixNano())
					}
				}
			}
			if got := maxInWindow(admitted, int64(rule.Window)); got != tt.maxSeen {
				t.Errorf("admitted %d in one window, want %d", got, tt.maxSeen)
			}
		})
	}
}
