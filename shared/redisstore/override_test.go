package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestItemLimitRedis: the same with the counts in Redis, through the
// guard and its denial cache, on both backends.
func TestItemLimitRedis(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, alg := range []ratelimit.Algorithm{ratelimit.Sliding, ratelimit.Log} {
				t.Run(alg.String(), func(t *testing.T) {
					s, _ := newStore(t, b.start(t))
					g := newGuard(t, s, guard.Options{})
					z := newZone(t, "tiers", ratelimit.Rule{Window: time.Minute, Limit: 2, Algorithm: alg})
					checkTiers(t, g, z, time.Now())
					if g.Stats().CacheHits == 0 {
						t.Fatal("the denial cache was never used")
					}
					// The cached arguments stay the rule's.
					spec, _ := s.ruleArgs(z)
					if spec[0] != packRule(z.Rule(), 2) {
						t.Fatalf("cached rule argument %q, want the rule's limit 2", spec[0])
					}
				})
			}
		})
	}
}

// takeN decides one request of key under limit (0: the rule's) in s.
func takeN(t *testing.T, s ratelimit.Store, now time.Time, z *ratelimit.Zone, key string, limit int64) ratelimit.Decision {
	t.Helper()
	out := make([]ratelimit.Decision, 1)
	if _, err := s.Take(context.Background(), now, []ratelimit.Item{{Zone: z, Key: key, Limit: limit}}, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// checkTiers takes key under the rule's limit 2 until denied, then under
// 5: the count is kept (3 more, not 5), the decisions show the limit
// that applied, and the denial under 2 does not answer for 5.
func checkTiers(t *testing.T, s ratelimit.Store, z *ratelimit.Zone, now time.Time) {
	t.Helper()
	for i := 0; i < 2; i++ {
		if d := takeN(t, s, now, z, "k", 0); !d.Allowed || d.Limit != 2 {
			t.Fatalf("request %d under the rule's limit: %+v", i+1, d)
		}
	}
	if d := takeN(t, s, now, z, "k", 0); d.Allowed || d.Limit != 2 {
		t.Fatalf("third request under limit 2: %+v, want denied", d)
	}
	// Denied again: a cached denial now exists (memory and guard).
	if d := takeN(t, s, now, z, "k", 0); d.Allowed {
		t.Fatalf("fourth request under limit 2 allowed")
	}
	for i := 0; i < 3; i++ {
		d := takeN(t, s, now, z, "k", 5)
		if !d.Allowed || d.Limit != 5 || d.Remaining != int64(2-i) {
			t.Fatalf("request %d under limit 5: %+v, want allowed with limit 5 and %d remaining", i+1, d, 2-i)
		}
	}
	if d := takeN(t, s, now, z, "k", 5); d.Allowed || d.Limit != 5 {
		t.Fatalf("sixth request under limit 5: %+v, want denied (the count kept)", d)
	}
	if d := takeN(t, s, now, z, "k", 0); d.Allowed || d.Limit != 2 || d.Remaining != 0 {
		t.Fatalf("back under limit 2: %+v, want denied with limit 2", d)
	}
	// Another key under the rule's limit is unaffected.
	if d := takeN(t, s, now, z, "other", 0); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("other key: %+v", d)
	}
}
