package redisstore

import (
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"

	"context"
	"testing"
	"time"
)

// leaseStores runs f against the Redis store on miniredis (the script's
// general path) and on a real redis-server (its straight-line path), with
// the caller's clock.
func leaseStores(t *testing.T, f func(t *testing.T, s *Store, g *guard.Guard, zone func(ratelimit.Rule) *ratelimit.Zone)) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			s, _ := newStore(t, be.start(t))
			s.callerTime = true
			g, err := guard.New(s, guard.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			f(t, s, g, func(r ratelimit.Rule) *ratelimit.Zone {
				n++
				return newZone(t, "ls"+string(rune('a'+n)), r)
			})
		})
	}
}

func takeLease(t *testing.T, s ratelimit.Store, now time.Time, z *ratelimit.Zone, key string, lease int64) ratelimit.Decision {
	t.Helper()
	out := make([]ratelimit.Decision, 1)
	if _, err := s.Take(context.Background(), now, []ratelimit.Item{{Zone: z, Key: key, Lease: lease}}, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// TestLeaseGrant: a lease counts the request and up to B more units at
// once, never more than half of what the window has left after the
// request, so that near the limit it shrinks to nothing; the units last
// until the end of the request's sub-window, and the ones given back count
// no more.
func TestLeaseGrant(t *testing.T) {
	leaseStores(t, func(t *testing.T, s *Store, g *guard.Guard, zone func(ratelimit.Rule) *ratelimit.Zone) {
		for _, alg := range []ratelimit.Algorithm{ratelimit.Sliding, ratelimit.Strict, ratelimit.Fixed} {
			t.Run(alg.String(), func(t *testing.T) {
				r := ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 100, Algorithm: alg}
				if alg == ratelimit.Fixed {
					r.SubWindow = 0
				}
				z := zone(r)
				now := epoch.Add(2 * time.Second)
				d := takeLease(t, s, now, z, "k", 10)
				if !d.Allowed || d.Leased != 10 || d.Remaining != 89 {
					t.Fatalf("first lease: %+v, want 10 units leased, 89 remaining", d)
				}
				T := 6 * time.Second
				if alg == ratelimit.Fixed {
					T = time.Minute
				}
				if want := T - time.Duration(now.UnixMicro()%T.Microseconds())*time.Microsecond; d.LeaseFor != want {
					t.Fatalf("LeaseFor = %v, want %v (to the end of the sub-window)", d.LeaseFor, want)
				}
				// A lease of 1000 gets half of what is left: (100-11-1)/2.
				d = takeLease(t, s, now, z, "k", 1000)
				if d.Leased != 44 || d.Remaining != 44 {
					t.Fatalf("big lease: %+v, want 44 leased, 44 remaining", d)
				}
				// Down to the limit: the lease halves each time, then none.
				var sizes []int64
				for d.Remaining > 0 {
					d = takeLease(t, s, now, z, "k", 1000)
					sizes = append(sizes, d.Leased)
				}
				if got := sizes[len(sizes)-1]; got != 0 {
					t.Fatalf("leases near the limit %v: the last should be 0", sizes)
				}
				if d = takeLease(t, s, now, z, "k", 1000); d.Allowed || d.Leased != 0 {
					t.Fatalf("at the limit: %+v, want denied with nothing leased", d)
				}
			})
		}
	})
}

// TestLeaseGiveBack: units given back come off the sub-window they were
// counted in, so that others can take them; once that sub-window left the
// window they are gone anyway, and giving back does nothing.
func TestLeaseGiveBack(t *testing.T) {
	leaseStores(t, func(t *testing.T, s *Store, g *guard.Guard, zone func(ratelimit.Rule) *ratelimit.Zone) {
		r := ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 10, Algorithm: ratelimit.Strict}
		z := zone(r)
		now := epoch.Add(time.Second)
		d := takeLease(t, g, now, z, "k", 100)
		if d.Leased != 4 || d.Remaining != 5 {
			t.Fatalf("lease: %+v, want 4 leased, 5 remaining", d)
		}
		g.GiveBack(context.Background(), now, ratelimit.Item{Zone: z, Key: "k"}, d, ratelimit.LeaseUse{Granted: d.Leased, Unspent: 3})
		for i := 0; i < 8; i++ {
			if d := take1(t, g, now, z, "k"); !d.Allowed {
				t.Fatalf("take %d after giving 3 back: denied, want 8 admitted (10 - 1 - 1 kept)", i+1)
			}
		}
		if d := take1(t, g, now, z, "k"); d.Allowed {
			t.Fatalf("the 9th take after giving 3 back was admitted: the unit kept is counted")
		}
	})
}

// TestLeaseWideTotal: a lease that takes a key's total past what its
// cells hold goes through the script's general path with the same
// result, and so does a call of several items.
func TestLeaseWideTotal(t *testing.T) {
	leaseStores(t, func(t *testing.T, s *Store, g *guard.Guard, zone func(ratelimit.Rule) *ratelimit.Zone) {
		r := ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 100000}
		z := zone(r)
		now := epoch.Add(time.Second)
		if d := takeLease(t, s, now, z, "k", 1000); d.Leased != 1000 || d.Remaining != 100000-1001 {
			t.Fatalf("wide lease: %+v", d)
		}
		z2 := zone(ratelimit.Rule{Window: time.Minute, Limit: 50, Algorithm: ratelimit.Log})
		out := make([]ratelimit.Decision, 2)
		ok, err := s.Take(context.Background(), now, []ratelimit.Item{{Zone: z, Key: "k", Lease: 10}, {Zone: z2, Key: "k", Lease: 10}}, out)
		if err != nil || !ok {
			t.Fatalf("two items: %v %v", ok, err)
		}
		if out[0].Leased != 10 || out[0].Remaining != 100000-1001-11 || out[1].Leased != 0 || out[1].Remaining != 49 {
			t.Fatalf("two items: %+v, want 10 leased on the bucket rule and none on the log", out)
		}
	})
}
