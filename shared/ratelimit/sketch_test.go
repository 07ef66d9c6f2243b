package ratelimit

import (
	"math/rand"
	"strconv"
	"testing"
	"time"
)

// realCount returns what the admitted timestamps of one key count at t,
// with the leaving sub-window counted whole, and when the newest of them
// stops counting: what evicting the key must not forget.
func realCount(z *Zone, admitted []int64, t int64) (int, int64) {
	if len(admitted) == 0 {
		return 0, 0
	}
	n := 0
	for _, ts := range admitted {
		if z.log && ts > t-z.window || !z.log && ts/z.span > t/z.span-z.reach {
			n++
		}
	}
	newest := admitted[len(admitted)-1]
	if z.log {
		return n, newest + z.window
	}
	return n, (newest/z.span + z.reach) * z.span
}

// TestSketchNeverUnderestimates drives a small zone with many keys of
// uneven popularity, so that keys are evicted and come back all the time,
// and checks at every step that the sketch holds, for every key it does
// not track, at least the count the key's admitted requests still have,
// for at least as long.
func TestSketchNeverUnderestimates(t *testing.T) {
	rules := []Rule{
		{Window: 10 * time.Second, SubWindow: time.Second, Limit: 6, Cost: 1},
		{Window: 10 * time.Second, SubWindow: 2 * time.Second, Limit: 9, Cost: 2},
		{Window: 10 * time.Second, SubWindow: time.Second, Limit: 6, Algorithm: Strict, Cost: 1},
		{Window: 10 * time.Second, Limit: 6, Algorithm: Fixed, Cost: 1},
		{Window: 10 * time.Second, Limit: 6, Algorithm: Log, Cost: 1},
		{Window: 10 * time.Second, Limit: 6, Algorithm: Log, Cost: 3},
	}
	for _, rule := range rules {
		t.Run(rule.Algorithm.String()+"/cost="+strconv.Itoa(int(rule.Cost)), func(t *testing.T) {
			rng := rand.New(rand.NewSource(7))
			z := newZone(t, "test", rule, Options{MaxKeys: 40})
			const keys = 400
			admitted := make([][]int64, keys)
			at := start.UnixNano()
			checked := 0
			for step := 0; step < 20000; step++ {
				at += rng.Int63n(int64(rule.Window) / 200)
				// Popular keys come back often, the others rarely.
				i := int(float64(keys) * rng.Float64() * rng.Float64() * rng.Float64())
				if TakeAt(z, strconv.Itoa(i), time.Unix(0, at)).Allowed {
					for c := int64(0); c < z.rule.Cost; c++ {
						admitted[i] = append(admitted[i], at)
					}
				}
				if step%10 != 0 {
					continue
				}
				for j := range admitted {
					h := z.hash(strconv.Itoa(j))
					s := &z.shards[h&z.mask]
					if _, ok := s.index[h]; ok {
						continue
					}
					n, until := realCount(z, admitted[j], at)
					if n == 0 {
						continue
					}
					e, u := s.evicted.estimate(h, at)
					if int(e) < n || u < until {
						t.Fatalf("step %d: evicted key %d counts %d until +%v, the sketch says %d until +%v",
							step, j, n, time.Duration(until-at), e, time.Duration(u-at))
					}
					checked++
				}
			}
			if st := z.Stats(); checked == 0 || st.Evictions == 0 || st.Estimated == 0 {
				t.Fatalf("checked %d evicted keys, stats %+v: the test did not evict", checked, st)
			}
		})
	}
}

// TestSeededCountExpiresOnTime evicts a key at its limit and brings it
// back: it must get exactly the decisions of a twin zone that never
// evicted it, the seeded count stopping exactly when the real one would.
func TestSeededCountExpiresOnTime(t *testing.T) {
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			rule := Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 5, Algorithm: alg}
			if alg == Fixed || alg == Log {
				rule.SubWindow = 0
			}
			tight := newZone(t, "test", rule, Options{MaxKeys: 1})
			twin := newZone(t, "test", rule, Options{MaxKeys: 100})
			// The other key must not share both sketch cells with the
			// victim, or its later end could stretch the victim's.
			width, shift := sketchWidth(tight.perShard)
			k := sketch{width: width, shift: shift}
			va, vb := k.cells(tight.hash("victim"))
			other := ""
			for i := 0; other == ""; i++ {
				if a, b := k.cells(tight.hash("x" + strconv.Itoa(i))); a != va || b != vb {
					other = "x" + strconv.Itoa(i)
				}
			}
			t0 := start.UnixNano() + int64(300*time.Millisecond)
			both := func(key string, at int64) (Decision, Decision) {
				return TakeAt(tight, key, time.Unix(0, at)), TakeAt(twin, key, time.Unix(0, at))
			}
			for i := 0; i < 5; i++ {
				both("victim", t0)
			}
			both(other, t0+int64(time.Millisecond)) // evicts the victim
			if tight.Len() != 1 || tight.Stats().Evictions != 1 {
				t.Fatalf("the victim was not evicted: %+v", tight.Stats())
			}
			span := int64(rule.Window) / 10
			for at := t0 + 2*int64(time.Millisecond); at < t0+int64(rule.Window)+3*span; at += span / 3 {
				got, want := both("victim", at)
				if got != want {
					t.Fatalf("victim at +%v: %+v, never evicted %+v", time.Duration(at-t0), got, want)
				}
			}
			if st := tight.Stats(); st.Estimated != 1 {
				t.Fatalf("stats %+v, want the victim estimated once", st)
			}
		})
	}
}

// TestSketchMemory checks the documented cost of the sketch: fixed per
// zone, at most 96 bytes per key of max_keys (384 bytes per shard for the
// smallest), allocated only once a shard evicts a live key.
func TestSketchMemory(t *testing.T) {
	for _, maxKeys := range []int{1, 10, 1000, 4096, 100000} {
		z := newZone(t, "test", Rule{Window: time.Minute, Limit: 1}, Options{MaxKeys: maxKeys})
		per := sketchBytes(z.perShard)
		if per > 96*z.perShard && per > 384 {
			t.Errorf("max_keys %d: %d bytes per shard of %d keys", maxKeys, per, z.perShard)
		}
		at := start.UnixNano()
		for i := 0; i < 2*maxKeys; i++ {
			TakeAt(z, strconv.Itoa(i), time.Unix(0, at))
			if i == maxKeys/2 {
				for j := range z.shards {
					if z.shards[j].evicted.counts != nil {
						t.Fatalf("max_keys %d: a sketch allocated before the zone was half full", maxKeys)
					}
				}
			}
		}
		for j := range z.shards {
			s := &z.shards[j]
			if got := 4*len(s.evicted.counts) + 8*len(s.evicted.until); s.evicted.counts != nil && got != per {
				t.Errorf("max_keys %d: shard %d holds a sketch of %d bytes, want %d", maxKeys, j, got, per)
			}
		}
		t.Logf("max_keys %d: %d shards of %d keys, sketch %d bytes each: %.1f bytes per key",
			maxKeys, len(z.shards), z.perShard, per, float64(per*len(z.shards))/float64(maxKeys))
	}
}
