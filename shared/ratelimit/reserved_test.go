package ratelimit

import (
	"math/rand"
	"testing"
	"time"
)

// TestTakeReservedMatchesTakeAll: on random traces of reservations,
// refunds (some long after, some of receipts already refunded), clock
// steps back and overridden limits, TakeReservedAt and RefundAt decide and
// give back exactly as TakeAll and refund, the general path, do one
// Refundable item, under every algorithm and a cost above 1; a receipt
// refunded twice gives back once.
func TestTakeReservedMatchesTakeAll(t *testing.T) {
	rules := append([]Rule(nil), refundRules...)
	for _, r := range refundRules {
		r.Cost = 2
		rules = append(rules, r)
	}
	for _, r := range rules {
		name := r.Algorithm.String()
		if r.Cost > 1 {
			name += "/cost"
		}
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(r.Algorithm)*3 + r.Cost))
			single := newZone(t, "single", r)
			all := newZone(t, "all", r)
			type held struct {
				key  string
				one  Decision
				many []Decision
			}
			var pending []held
			now := epoch
			for i := 0; i < 20000; i++ {
				switch rng.Intn(10) {
				case 0: // a clock step back, within a sub-window
					now = now.Add(-time.Duration(rng.Intn(3000)) * time.Millisecond)
				case 1, 2:
					now = now.Add(time.Duration(rng.Intn(4000)) * time.Millisecond)
				}
				if len(pending) > 0 && rng.Intn(3) == 0 {
					j := rng.Intn(len(pending))
					p := pending[j]
					RefundAt(single, p.key, &p.one)
					refundGeneral(all, p.key, &p.many[0])
					if rng.Intn(4) == 0 { // a second refund of the same receipt
						RefundAt(single, p.key, &p.one)
						refundGeneral(all, p.key, &p.many[0])
					}
					pending = append(pending[:j], pending[j+1:]...)
					continue
				}
				key := string(rune('a' + rng.Intn(4)))
				var limit int64
				if key == "d" {
					limit = 2 // an override
				}
				one := TakeReservedAt(single, key, now, limit)
				many := make([]Decision, 1)
				TakeAll(now, []Item{{Zone: all, Key: key, Refundable: true, Limit: limit}}, many)
				if withoutGeneration(one) != withoutGeneration(many[0]) {
					t.Fatalf("step %d, key %q at +%v: TakeReservedAt %+v, TakeAll %+v", i, key, now.Sub(epoch), one, many[0])
				}
				if one.Allowed {
					pending = append(pending, held{key, one, many})
				}
			}
		})
	}
}

// refundGeneral is RefundAt without its written-out common case.
func refundGeneral(z *Zone, key string, d *Decision) {
	if d.Receipt.At == 0 {
		return
	}
	k := z.hash(key)
	s := &z.shards[k&z.mask]
	s.Lock()
	refund(z, s, k, d.Receipt.At, d.Receipt.Generation)
	s.Unlock()
	d.Receipt.At = 0
}

// withoutGeneration returns d with its receipt's generation cleared: two
// zones number their keys' generations each on its own (TakeAll may make a
// slot, and so a generation, for a request that a Log zone then denies).
func withoutGeneration(d Decision) Decision {
	d.Receipt.Generation = 0
	return d
}

var refundRules = []Rule{
	{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 5},
	{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 5, Algorithm: Strict},
	{Window: time.Minute, Limit: 5, Algorithm: Fixed},
	{Window: time.Minute, Limit: 5, Algorithm: Log},
}
