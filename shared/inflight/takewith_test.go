package inflight

import (
	"context"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// TestTakeWithDifferential drives TakeWith on both sides with one random
// sequence of requests and releases on a few keys: in memory (the slot,
// then the rate of the memory store) and on a real redis-server (the slot
// and the rate in one script call), against an exact reference. A
// request refused a slot counts nothing, one the rate refuses holds no
// slot, and both sides agree on every answer, on the slots held and on
// the counts.
func TestTakeWithDifferential(t *testing.T) {
	addr := redistest.Start(t).Addr()
	c, err := resp.New(resp.Options{Addrs: []string{addr}, ReadTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	const limit = 30
	rule := ratelimit.Rule{Algorithm: ratelimit.Sliding, Window: time.Hour, SubWindow: time.Minute, Limit: limit, Cost: 1}

	for seed := int64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewSource(seed))
		name := "tw" + strconv.FormatInt(seed, 10)
		zone, err := ratelimit.NewZone(name, rule, ratelimit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(zone.Close)
		slots, err := redisstore.NewSlots(c, "tw:")
		if err != nil {
			t.Fatal(err)
		}
		store, err := redisstore.New(c, redisstore.Settings{KeyPrefix: "tw:"})
		if err != nil {
			t.Fatal(err)
		}
		mem, err := New(Options{Zone: name})
		if err != nil {
			t.Fatal(err)
		}
		red, err := New(Options{Zone: name, Remote: slots, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(red.Close)
		// The memory side's rate zone: a second zone of the same rule.
		memZone, err := ratelimit.NewZone(name, rule, ratelimit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(memZone.Close)

		type pair struct {
			key  string
			m, r Slot
		}
		var running []pair
		slotsHeld := map[string]int64{}
		counted := map[string]int64{}
		keys := []string{"a", "b", "c"}
		var full, refused, served int
		check := func(step int) {
			for _, k := range keys {
				want := slotsHeld[k]
				rh, err := red.Count(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				waited := time.Now()
				for rh != want && time.Since(waited) < 2*time.Second {
					// Releases go to Redis in the background.
					time.Sleep(5 * time.Millisecond)
					if rh, err = red.Count(ctx, k); err != nil {
						t.Fatal(err)
					}
				}
				if mh, _ := mem.Count(ctx, k); mh != want || rh != want {
					t.Fatalf("seed %d step %d: %q holds %d slots in memory, %d in redis, %d in the reference", seed, step, k, mh, rh, want)
				}
			}
		}
		for step := 0; step < 300; step++ {
			key := keys[rng.Intn(len(keys))]
			if rng.Intn(3) == 0 && len(running) > 0 {
				i := rng.Intn(len(running))
				p := running[i]
				running = append(running[:i], running[i+1:]...)
				mem.Release(p.m)
				red.Release(p.r)
				slotsHeld[p.key]--
				check(step)
				continue
			}
			n := int64(1 + rng.Intn(3))
			now := time.Now()
			mo, ro := make([]ratelimit.Decision, 1), make([]ratelimit.Decision, 1)
			ms, mh, mFull, mOK, err := mem.TakeWith(ctx, ratelimit.Memory{}, []ratelimit.Item{{Zone: memZone, Key: key}}, mo, n, now)
			if err != nil {
				t.Fatal(err)
			}
			rs, rh, rFull, rOK, err := red.TakeWith(ctx, store, []ratelimit.Item{{Zone: zone, Key: key}}, ro, n, now)
			if err != nil {
				t.Fatal(err)
			}
			wantFull := slotsHeld[key] >= n
			wantOK := !wantFull && counted[key] < limit
			if mFull != wantFull || rFull != wantFull || mOK != wantOK || rOK != wantOK {
				t.Fatalf("seed %d step %d: %q at n=%d with %d slots held and %d counted: memory full %v ok %v, redis full %v ok %v; want full %v ok %v",
					seed, step, key, n, slotsHeld[key], counted[key], mFull, mOK, rFull, rOK, wantFull, wantOK)
			}
			switch {
			case wantFull:
				full++
				if mh != slotsHeld[key] || rh != slotsHeld[key] {
					t.Fatalf("seed %d step %d: full %q: memory says %d held, redis %d, reference %d", seed, step, key, mh, rh, slotsHeld[key])
				}
			case !wantOK:
				refused++
				if mo[0].Allowed || ro[0].Allowed || mo[0].RetryAfter <= 0 || ro[0].RetryAfter <= 0 {
					t.Fatalf("seed %d step %d: a rate refusal of %q: memory %+v, redis %+v", seed, step, key, mo[0], ro[0])
				}
			default:
				served++
				slotsHeld[key]++
				counted[key]++
				if mh != slotsHeld[key] || rh != slotsHeld[key] {
					t.Fatalf("seed %d step %d: %q took a slot: memory says %d held, redis %d, reference %d", seed, step, key, mh, rh, slotsHeld[key])
				}
				if mo[0].Remaining != ro[0].Remaining || ro[0].Remaining != limit-counted[key] {
					t.Fatalf("seed %d step %d: %q remaining: memory %d, redis %d, reference %d", seed, step, key, mo[0].Remaining, ro[0].Remaining, limit-counted[key])
				}
				running = append(running, pair{key, ms, rs})
			}
			check(step)
		}
		for _, p := range running {
			mem.Release(p.m)
			red.Release(p.r)
		}
		if full == 0 || refused == 0 || served == 0 {
			t.Fatalf("seed %d: %d full, %d refused, %d served: the sequence misses a case", seed, full, refused, served)
		}
		t.Logf("seed %d: %d served, %d refused by the rate, %d by a full set", seed, served, refused, full)
	}
}
