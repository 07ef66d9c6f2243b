package ratelimit

import (
	"math"
	"testing"
	"time"
)

// TestGenerationWrap: a receipt of a key forgotten since gives nothing back to
// the key made after it, even when the shard has made 2^32 - 1 keys in
// between (the counter is set there, not counted up): a generation counter of
// 32 bits gave the new key the old key's generation, and its count the refund.
func TestGenerationWrap(t *testing.T) {
	for _, a := range []Algorithm{Sliding, Log} {
		t.Run(a.String(), func(t *testing.T) {
			z := newZone(t, "z", Rule{Window: time.Minute, Limit: 5, Algorithm: a})
			at := time.Unix(1_800_000_000, 0).UnixNano()
			var stale [5]Decision
			for i := range stale {
				if stale[i] = TakeReservedAt(z, "a", time.Unix(0, at), 0); !stale[i].Allowed {
					t.Fatalf("request %d denied: %+v", i, stale[i])
				}
			}
			z.Forget("a")
			s := &z.shards[z.hash("a")&z.mask]
			s.Lock()
			s.born += math.MaxUint32 // 2^32 - 1 keys made since
			s.Unlock()
			admitted := 0
			for i := 0; i < 10; i++ {
				if TakeAt(z, "a", time.Unix(0, at)).Allowed {
					admitted++
				}
				if i < len(stale) {
					RefundAt(z, "a", &stale[i])
				}
			}
			if admitted != 5 {
				t.Errorf("%d admitted against a limit of 5: the forgotten key's receipts gave back the new key's count", admitted)
			}
		})
	}
}
