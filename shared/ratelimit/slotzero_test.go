package ratelimit

import (
	"math"
	"strconv"
	"testing"
	"time"
)

// TakeAt finds an unknown key, and every key of a Log zone, at a head no
// decision can use (see shard.heads), whatever the time: before 1970 too,
// where a zero head's sub-window would hold it, and at the far end of the
// clock.
func TestTakeAtNeverAdmitsFromAnUnusableHead(t *testing.T) {
	for _, alg := range []Algorithm{Sliding, Strict, Fixed, Log} {
		for _, at := range []int64{-1, -int64(time.Second), 0, 1, math.MaxInt64, math.MinInt64} {
			rule := Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 1, Algorithm: alg}
			if alg == Fixed || alg == Log {
				rule.SubWindow = 0
			}
			z := newZone(t, "test", rule, Options{})
			if d := TakeAt(z, "a", time.Unix(0, at)); !d.Allowed {
				t.Fatalf("%v at %d: first request denied: %+v", alg, at, d)
			}
			if d := TakeAt(z, "a", time.Unix(0, at)); d.Allowed {
				t.Errorf("%v at %d: second request of a limit of 1 admitted: %+v", alg, at, d)
			}
		}
	}
}

// Slot 0 of every shard holds no key, through new keys, evictions,
// sweeps and reused slots.
func TestSlotZeroHoldsNoKey(t *testing.T) {
	for _, alg := range []Algorithm{Sliding, Log} {
		z := newZone(t, "test", Rule{Window: 10 * time.Second, Limit: 3, Algorithm: alg}, Options{MaxKeys: 1024})
		for i := 0; i < 5000; i++ {
			at := start.Add(time.Duration(i) * 10 * time.Millisecond)
			TakeAt(z, strconv.Itoa(i%3000), at)
			if i%1000 == 999 {
				z.sweepAll(at.Add(time.Minute))
			}
		}
		for i := range z.shards {
			s := &z.shards[i]
			for key, slot := range s.index {
				if slot == 0 {
					t.Fatalf("%v: key %x holds slot 0", alg, key)
				}
			}
			if h := s.heads[0]; h.end != 0 || !math.IsInf(h.inside, 1) {
				t.Fatalf("%v: slot 0's head was written: %+v", alg, h)
			}
		}
	}
}
