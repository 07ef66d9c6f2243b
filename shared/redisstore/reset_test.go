package redisstore

import (
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"

	"context"
	"testing"
	"time"
)

// TestRedisResetLeases: an operator's reset (Forget) starts a key's next
// generation with the units other instances still hold in leases counted,
// but not the resetting instance's own; a lease of before gives its units
// back to that generation, with the ones it spent before its generation was
// last confirmed. After a loss (the key deleted in Redis), a give-back
// counts what the lease spent since instead; a reservation of before gets
// nothing back from either.
func TestRedisResetLeases(t *testing.T) {
	leaseStores(t, func(t *testing.T, s *Store, g *guard.Guard, zone func(ratelimit.Rule) *ratelimit.Zone) {
		ctx := context.Background()
		r := ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 100, Algorithm: ratelimit.Strict}
		remaining := func(z *ratelimit.Zone, now time.Time) int64 {
			t.Helper()
			st, err := s.Inspect(ctx, z, "k", now)
			if err != nil {
				t.Fatal(err)
			}
			return st.Remaining
		}
		now := epoch.Add(time.Second)

		z := zone(r)
		a := takeLease(t, g, now, z, "k", 10) // counts 11
		b := takeLease(t, g, now, z, "k", 20) // counts 21
		res := takeReserve(t, g, now, z, "k") // counts 1
		if a.Leased != 10 || b.Leased != 20 || res.Receipt.At == 0 {
			t.Fatalf("leases %d and %d, reservation %+v: want 10, 20 and a receipt", a.Leased, b.Leased, res.Receipt)
		}
		if _, err := s.Forget(ctx, z, "k", now, a.Leased); err != nil {
			t.Fatal(err)
		}
		if got := remaining(z, now); got != 80 {
			t.Fatalf("after an operator's reset %d remaining, want 80: the 20 units of the other lease kept across the reset, not the resetting one's 10", got)
		}
		if err := g.Refund(ctx, []ratelimit.Item{{Zone: z, Key: "k", Refundable: true}}, []ratelimit.Decision{res}); err != nil {
			t.Fatal(err)
		}
		if got := remaining(z, now); got != 80 {
			t.Fatalf("a reservation of before refunded into the reset count: %d remaining, want 80", got)
		}
		// The other lease spent 5 units before a reply confirmed its generation,
		// 3 after the reset, and gives back 12.
		g.GiveBack(ctx, now, ratelimit.Item{Zone: z, Key: "k"}, b, ratelimit.LeaseUse{Granted: 20, Unspent: 12, Confirmed: 5})
		if got := remaining(z, now); got != 97 {
			t.Fatalf("after the give-back %d remaining, want 97: the 3 spent since the reset counted", got)
		}

		z = zone(r)
		b = takeLease(t, g, now, z, "k", 20) // counts 21
		s.run.(interface {
			Eval(context.Context, string, []string, []string) ([]int64, error)
		}).Eval(ctx, "redis.call('DEL', KEYS[1]) return {}", []string{Key(s.prefix, z.Name(), "k")}, nil)
		take1(t, g, now, z, "k") // the key's next generation: 1
		g.GiveBack(ctx, now, ratelimit.Item{Zone: z, Key: "k"}, b, ratelimit.LeaseUse{Granted: 20, Unspent: 12, Confirmed: 5})
		if got := remaining(z, now); got != 96 {
			t.Fatalf("after a loss and the give-back %d remaining, want 96: the 3 units spent since the last confirmation counted", got)
		}
	})
}

func takeReserve(t *testing.T, s ratelimit.Store, now time.Time, z *ratelimit.Zone, key string) ratelimit.Decision {
	t.Helper()
	out := make([]ratelimit.Decision, 1)
	if _, err := s.Take(context.Background(), now, []ratelimit.Item{{Zone: z, Key: key, Refundable: true}}, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// TestRefundLogAfterReset: a reservation on a log key, an operator's
// reset, then a request at the same microsecond, which the script would
// once name as the reservation's entry: the reservation's refund gives
// nothing back to the fresh count, which stays 1, so the limit of 1 holds.
// A receipt of an earlier version (generation 0) still takes back an
// entry named as that version named them.
func TestRefundLogAfterReset(t *testing.T) {
	ctx := context.Background()
	r := ratelimit.Rule{Window: time.Minute, Limit: 1, Algorithm: ratelimit.Log}
	now := epoch.Add(time.Second)
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			s, _ := newStore(t, be.start(t))
			s.callerTime = true
			for _, second := range []string{"take", "reserve"} {
				t.Run(second, func(t *testing.T) {
					z := newZone(t, "lr-"+second, r)
					items := []ratelimit.Item{{Zone: z, Key: "k", Refundable: true}}
					first := reserve(t, s, now, items, true)
					if _, err := s.Forget(ctx, z, "k", now, 0); err != nil {
						t.Fatal(err)
					}
					if second == "take" {
						take1(t, s, now, z, "k")
					} else {
						reserve(t, s, now, items, true)
					}
					if err := s.Refund(ctx, items, first); err != nil {
						t.Fatal(err)
					}
					st, err := s.Inspect(ctx, z, "k", now)
					if err != nil {
						t.Fatal(err)
					}
					if st.Remaining != 0 {
						t.Fatalf("after the refund of a reservation of before the reset: %+v, want the fresh count of 1 kept (0 remaining)", st)
					}
					reserve(t, s, now, items, false)
				})
			}
			t.Run("earlier receipt", func(t *testing.T) {
				z := newZone(t, "lr-earlier", r)
				take1(t, s, now, z, "k")
				items := []ratelimit.Item{{Zone: z, Key: "k", Refundable: true}}
				earlier := []ratelimit.Decision{{Allowed: true, Receipt: ratelimit.Receipt{At: now.UnixNano(), Remote: true}}}
				if err := s.Refund(ctx, items, earlier); err != nil {
					t.Fatal(err)
				}
				reserve(t, s, now, items, true)
			})
		})
	}
}
