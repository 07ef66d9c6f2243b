package ratelimit

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// inspectRules are the rules the inspection tests replay, one per
// algorithm, with a cost-2 variant of the sliding window.
var inspectRules = []Rule{
	{Window: 10 * time.Second, SubWindow: time.Second, Limit: 7, Algorithm: Sliding},
	{Window: 10 * time.Second, SubWindow: time.Second, Limit: 7, Algorithm: Sliding, Cost: 2},
	{Window: 10 * time.Second, SubWindow: 2 * time.Second, Limit: 7, Algorithm: Strict},
	{Window: 10 * time.Second, Limit: 7, Algorithm: Fixed},
	{Window: 10 * time.Second, Limit: 7, Algorithm: Log},
}

// inspectTimes returns n request times from a fixed start, whole
// milliseconds apart (Redis counts in microseconds), in bursts that
// exhaust the limit and pauses that let the window slide.
func inspectTimes(seed uint64, n int) []time.Time {
	rng := rand.New(rand.NewPCG(seed, 1))
	t := time.Unix(1_800_000_000, 0)
	out := make([]time.Time, n)
	for i := range out {
		if rng.IntN(4) == 0 {
			t = t.Add(time.Duration(rng.IntN(6000)) * time.Millisecond)
		} else {
			t = t.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
		out[i] = t
	}
	return out
}

// checkAgainstTake compares what Inspect said at t with the decision a
// request of the zone's cost then got at t.
func checkAgainstTake(t *testing.T, what string, r Rule, st KeyState, d Decision) {
	t.Helper()
	if st.Count+st.Remaining != r.Limit && !(st.Remaining == 0 && st.Count >= r.Limit) {
		t.Fatalf("%s: count %d and remaining %d do not add up to the limit %d", what, st.Count, st.Remaining, r.Limit)
	}
	cost := r.Cost
	if cost == 0 {
		cost = 1
	}
	switch {
	case d.Allowed && d.Remaining != st.Remaining-cost:
		t.Fatalf("%s: inspected remaining %d, then an admitted request of cost %d left %d", what, st.Remaining, cost, d.Remaining)
	case !d.Allowed && d.Remaining != st.Remaining:
		t.Fatalf("%s: inspected remaining %d, then a denial said %d", what, st.Remaining, d.Remaining)
	case !d.Allowed && d.ResetAfter != st.ResetAfter:
		t.Fatalf("%s: inspected reset %v, then a denial said %v", what, st.ResetAfter, d.ResetAfter)
	case d.Allowed && st.Remaining < cost:
		t.Fatalf("%s: inspected remaining %d, yet a request of cost %d was admitted", what, st.Remaining, cost)
	}
}

// Inspect reads what the next request would find, and changes nothing:
// a twin zone that is never inspected takes the same decisions.
func TestZoneInspect(t *testing.T) {
	for _, r := range inspectRules {
		t.Run(r.Algorithm.String(), func(t *testing.T) {
			z, twin := newZone(t, "i", r), newZone(t, "i", r)
			for i, at := range inspectTimes(7, 400) {
				st := z.Inspect("k", at)
				if z.Inspect("other", at).Tracked || z.Len() > 1 {
					t.Fatalf("request %d: inspecting an unknown key tracked it", i)
				}
				d, dt := TakeAt(z, "k", at), TakeAt(twin, "k", at)
				if d != dt {
					t.Fatalf("request %d: inspected zone decided %+v, twin %+v", i, d, dt)
				}
				if i > 0 && !st.Tracked {
					t.Fatalf("request %d: key not tracked", i)
				}
				checkAgainstTake(t, "request "+strconv.Itoa(i), r, st, d)
			}
		})
	}
}

// Forget gives a key a fresh budget: its state and cached denial go.
func TestForget(t *testing.T) {
	r := Rule{Window: time.Minute, Limit: 3}
	now := time.Unix(1_800_000_000, 0)
	z := newZone(t, "f", r)
	for range 5 {
		TakeAt(z, "k", now)
	}
	if st := z.Inspect("k", now); st.Remaining != 0 || st.Count != 3 {
		t.Fatalf("exhausted key: %+v", st)
	}
	if !z.Forget("k") || z.Forget("k") {
		t.Fatal("Forget did not report the tracked key once")
	}
	if d := TakeAt(z, "k", now); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("after Forget: %+v, want admitted with 2 remaining", d)
	}
}
