package redisstore

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Redis's inspection agrees with the zone's, and with the script's next
// decision, on every algorithm; a key of another rule counts nothing, as
// the script would start it afresh.
func TestRedisInspect(t *testing.T) {
	srv := redistest.Start(t)
	store, _ := newStore(t, srv.Addr())
	store.callerTime = true
	ctx := context.Background()
	for _, r := range inspectRules {
		t.Run(r.Algorithm.String(), func(t *testing.T) {
			z := newZone(t, "ri"+r.Algorithm.String()+strconv.Itoa(int(r.Cost)), r)
			key := "k"
			for i, at := range inspectTimes(11, 200) {
				mem := z.Inspect(key, at)
				red, err := store.Inspect(ctx, z, key, at)
				if err != nil {
					t.Fatal(err)
				}
				if mem != red {
					t.Fatalf("request %d: memory %+v, redis %+v", i, mem, red)
				}
				checkAgainstTake(t, "request "+strconv.Itoa(i), r, red, take1(t, store, at, z, key))
				ratelimit.TakeAt(z, key, at)
			}
		})
	}
	other := newZone(t, "ri"+ratelimit.Sliding.String()+"0", ratelimit.Rule{Window: 20 * time.Second, Limit: 7})
	st, err := store.Inspect(ctx, other, "k", time.Unix(1_800_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if st.Count != 0 || st.Remaining != 7 {
		t.Fatalf("a key written by another window: %+v, want a fresh count", st)
	}
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
func checkAgainstTake(t *testing.T, what string, r ratelimit.Rule, st ratelimit.KeyState, d ratelimit.Decision) {
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

// Forget gives a key a fresh budget in Redis: its key goes, and the
// guard's cached denial with ForgetDenial.
func TestRedisForget(t *testing.T) {
	r := ratelimit.Rule{Window: time.Minute, Limit: 3}
	z := newZone(t, "f", r)
	var now time.Time
	srv := redistest.Start(t)
	store, _ := newStore(t, srv.Addr())
	g, err := guard.New(store, guard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now = time.Now()
	for range 4 {
		take1(t, g, now, z, "r")
	}
	if d := take1(t, g, now, z, "r"); d.Allowed || g.Stats().CacheHits == 0 {
		t.Fatalf("exhausted key: %+v, %d cache hits, want a cached denial", d, g.Stats().CacheHits)
	}
	deleted, err := store.Forget(ctx, z, "r", now, 0)
	if err != nil || !deleted {
		t.Fatalf("Forget: %v, %v", deleted, err)
	}
	if st, err := store.Inspect(ctx, z, "r", now); err != nil || st.Tracked || st.Remaining != 3 {
		t.Fatalf("after Forget: %+v, %v", st, err)
	}
	g.ForgetDenial(z, "r")
	if d := take1(t, g, now, z, "r"); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("after Forget and ForgetDenial: %+v, want admitted with 2 remaining", d)
	}
}

var inspectRules = []ratelimit.Rule{
	{Window: 10 * time.Second, SubWindow: time.Second, Limit: 7, Algorithm: ratelimit.Sliding},
	{Window: 10 * time.Second, SubWindow: time.Second, Limit: 7, Algorithm: ratelimit.Sliding, Cost: 2},
	{Window: 10 * time.Second, SubWindow: 2 * time.Second, Limit: 7, Algorithm: ratelimit.Strict},
	{Window: 10 * time.Second, Limit: 7, Algorithm: ratelimit.Fixed},
	{Window: 10 * time.Second, Limit: 7, Algorithm: ratelimit.Log},
}
