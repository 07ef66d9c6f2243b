package redisstore

import (
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"

	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// refundStore is a Store that refunds too: Memory or a Store of Redis.
type refundStore interface {
	ratelimit.Store
	ratelimit.Refunder
}

// refundStores runs f against the in-memory store and the Redis store on
// miniredis and on a real redis-server, with the caller's clock.
func refundStores(t *testing.T, f func(t *testing.T, s refundStore, zone func(ratelimit.Rule) *ratelimit.Zone)) {
	t.Run("memory", func(t *testing.T) {
		f(t, ratelimit.Memory{}, func(r ratelimit.Rule) *ratelimit.Zone { return newZone(t, "rf", r) })
	})
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			addr := be.start(t)
			s, _ := newStore(t, addr)
			s.callerTime = true
			n := 0
			f(t, s, func(r ratelimit.Rule) *ratelimit.Zone {
				n++
				return newZone(t, "rf"+string(rune('a'+n)), r)
			})
		})
	}
}

var refundRules = []ratelimit.Rule{
	{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 5},
	{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 5, Algorithm: ratelimit.Strict},
	{Window: time.Minute, Limit: 5, Algorithm: ratelimit.Fixed},
	{Window: time.Minute, Limit: 5, Algorithm: ratelimit.Log},
}

// reserve takes one request of items at now and fails the test unless it
// is admitted as want says.
func reserve(t *testing.T, s ratelimit.Store, now time.Time, items []ratelimit.Item, want bool) []ratelimit.Decision {
	t.Helper()
	out := make([]ratelimit.Decision, len(items))
	ok, err := s.Take(context.Background(), now, items, out)
	if err != nil || ok != want {
		t.Fatalf("take at +%v: allowed=%v err=%v %+v, want allowed=%v", now.Sub(epoch), ok, err, out, want)
	}
	return out
}

// TestReserveThenRefund: a Refundable item counts when it is admitted, so
// the sixth request in flight is denied; its refund gives the count back,
// once per receipt, and a denied request has nothing to give back.
func TestReserveThenRefund(t *testing.T) {
	refundStores(t, func(t *testing.T, s refundStore, zone func(ratelimit.Rule) *ratelimit.Zone) {
		for _, r := range refundRules {
			t.Run(r.Algorithm.String(), func(t *testing.T) {
				z := zone(r)
				ctx := context.Background()
				items := []ratelimit.Item{{Zone: z, Key: "ip", Refundable: true}}
				var held [][]ratelimit.Decision
				for i := 0; i < 5; i++ {
					out := reserve(t, s, epoch.Add(time.Duration(i)*time.Millisecond), items, true)
					if out[0].Remaining != int64(4-i) || out[0].Receipt.At == 0 {
						t.Fatalf("reservation %d: %+v, want %d remaining and a receipt", i, out[0], 4-i)
					}
					held = append(held, out)
				}
				denied := reserve(t, s, epoch.Add(time.Second), items, false)
				if denied[0].Receipt.At != 0 || denied[0].RetryAfter <= 0 {
					t.Fatalf("denial %+v: want a Retry-After and no receipt", denied[0])
				}
				if err := s.Refund(ctx, items, denied); err != nil {
					t.Fatal(err)
				}
				reserve(t, s, epoch.Add(time.Second), items, false) // nothing came back
				for _, out := range held[:2] {
					if err := s.Refund(ctx, items, out); err != nil {
						t.Fatal(err)
					}
				}
				out := reserve(t, s, epoch.Add(2*time.Second), items, true)
				if out[0].Remaining != 1 {
					t.Fatalf("after two refunds: %+v, want 1 remaining", out[0])
				}
				reserve(t, s, epoch.Add(2*time.Second), items, true)
				reserve(t, s, epoch.Add(2*time.Second), items, false)
			})
		}
	})
}

// TestRefundStaysInItsSubWindow: a refund takes the count back from the
// sub-window (or log entry) it was counted in, and from nowhere else: a
// receipt whose sub-window stopped counting gives nothing back, and one
// on a key that no longer holds as much never goes below zero.
func TestRefundStaysInItsSubWindow(t *testing.T) {
	refundStores(t, func(t *testing.T, s refundStore, zone func(ratelimit.Rule) *ratelimit.Zone) {
		for _, r := range refundRules {
			t.Run(r.Algorithm.String(), func(t *testing.T) {
				z := zone(r)
				ctx := context.Background()
				items := []ratelimit.Item{{Zone: z, Key: "ip", Refundable: true}}
				old := reserve(t, s, epoch, items, true)
				// Two windows later the old request counts nothing; the key
				// fills up, and the old receipt must not make room.
				later := epoch.Add(2*time.Minute + 30*time.Second)
				for i := 0; i < 5; i++ {
					reserve(t, s, later, items, true)
				}
				if err := s.Refund(ctx, items, old); err != nil {
					t.Fatal(err)
				}
				reserve(t, s, later.Add(time.Second), items, false)

				// A receipt of a sub-window that holds nothing of this key:
				// a forged one on a fresh key gives nothing back.
				fresh := []ratelimit.Item{{Zone: z, Key: "fresh", Refundable: true}}
				for i := 0; i < 5; i++ {
					reserve(t, s, later, fresh, true)
				}
				forged := []ratelimit.Decision{{Allowed: true, Receipt: old[0].Receipt}}
				if err := s.Refund(ctx, fresh, forged); err != nil {
					t.Fatal(err)
				}
				reserve(t, s, later.Add(time.Second), fresh, false)
			})
		}
	})
}

// TestRefundMixedWithTake: in one request a Refundable item and a plain
// one are counted together; the refund gives back only the Refundable
// one, and a denial of either counts nothing.
func TestRefundMixedWithTake(t *testing.T) {
	refundStores(t, func(t *testing.T, s refundStore, zone func(ratelimit.Rule) *ratelimit.Zone) {
		ctx := context.Background()
		login := zone(ratelimit.Rule{Window: time.Minute, Limit: 1, Algorithm: ratelimit.Fixed})
		all := zone(ratelimit.Rule{Window: time.Minute, Limit: 3, Algorithm: ratelimit.Fixed})
		items := []ratelimit.Item{{Zone: login, Key: "k", Refundable: true}, {Zone: all, Key: "k"}}
		for i := 0; i < 3; i++ {
			out := reserve(t, s, epoch, items, true)
			if out[0].Remaining != 0 || out[1].Remaining != int64(2-i) || out[1].Receipt.At != 0 {
				t.Fatalf("request %d: %+v, want login reserved and all counted", i, out)
			}
			if i < 2 {
				if err := s.Refund(ctx, items, out); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The login zone holds the third reservation; the plain zone is full.
		out := reserve(t, s, epoch, items, false)
		if out[0].Allowed || out[1].Allowed {
			t.Fatalf("4th request: %+v, want both zones denying", out)
		}
		later := epoch.Add(time.Minute) // the next fixed window
		out = reserve(t, s, later, items, true)
		if err := s.Refund(ctx, items, out); err != nil {
			t.Fatal(err)
		}
		if out := reserve(t, s, later, items[1:], true); out[0].Remaining != 1 {
			t.Fatalf("plain zone after a refund: %+v, want its count kept (1 remaining)", out[0])
		}
	})
}

// TestReserveBoundsInFlight: with one request left, 8 requests of one key
// in flight at once admit exactly one, whatever their responses will be;
// the key is then denied until that one is refunded.
func TestReserveBoundsInFlight(t *testing.T) {
	refundStores(t, func(t *testing.T, s refundStore, zone func(ratelimit.Rule) *ratelimit.Zone) {
		for _, r := range refundRules {
			t.Run(r.Algorithm.String(), func(t *testing.T) {
				z := zone(r)
				ctx := context.Background()
				items := []ratelimit.Item{{Zone: z, Key: "ip", Refundable: true}}
				for i := 0; i < 4; i++ {
					reserve(t, s, epoch, items, true)
				}
				const inFlight = 8
				var admitted atomic.Int64
				var mu sync.Mutex
				var receipt []ratelimit.Decision
				var wg sync.WaitGroup
				for g := 0; g < inFlight; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						out := make([]ratelimit.Decision, 1)
						if ok, err := s.Take(ctx, epoch, items, out); err == nil && ok {
							admitted.Add(1)
							mu.Lock()
							receipt = out
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				if got := admitted.Load(); got != 1 {
					t.Fatalf("admitted %d of %d in flight with 1 left, want 1", got, inFlight)
				}
				reserve(t, s, epoch, items, false)
				if err := s.Refund(ctx, items, receipt); err != nil {
					t.Fatal(err)
				}
				reserve(t, s, epoch, items, true)
			})
		}
	})
}

// TestRefundCost: a refund gives back the zone's cost, and a Log key's
// refund removes the entries of its receipt's time only.
func TestRefundCost(t *testing.T) {
	refundStores(t, func(t *testing.T, s refundStore, zone func(ratelimit.Rule) *ratelimit.Zone) {
		for _, r := range refundRules {
			r.Limit, r.Cost = 6, 2
			t.Run(r.Algorithm.String(), func(t *testing.T) {
				z := zone(r)
				items := []ratelimit.Item{{Zone: z, Key: "ip", Refundable: true}}
				a := reserve(t, s, epoch, items, true)
				b := reserve(t, s, epoch.Add(time.Second), items, true)
				reserve(t, s, epoch.Add(2*time.Second), items, true)
				reserve(t, s, epoch.Add(3*time.Second), items, false)
				if err := s.Refund(context.Background(), items, b); err != nil {
					t.Fatal(err)
				}
				if out := reserve(t, s, epoch.Add(3*time.Second), items, true); out[0].Remaining != 0 {
					t.Fatalf("after one refund of cost 2: %+v, want 0 remaining", out[0])
				}
				if err := s.Refund(context.Background(), items, a); err != nil {
					t.Fatal(err)
				}
				reserve(t, s, epoch.Add(4*time.Second), items, true)
				reserve(t, s, epoch.Add(4*time.Second), items, false)
			})
		}
	})
}

// TestRefundAfterClockStep: a request counted while the clock had gone
// back is counted in the newest sub-window (or at the newest time), and
// its receipt says so: the refund finds it there.
func TestRefundAfterClockStep(t *testing.T) {
	refundStores(t, func(t *testing.T, s refundStore, zone func(ratelimit.Rule) *ratelimit.Zone) {
		for _, r := range refundRules {
			t.Run(r.Algorithm.String(), func(t *testing.T) {
				z := zone(r)
				items := []ratelimit.Item{{Zone: z, Key: "ip", Refundable: true}}
				for i := 0; i < 4; i++ {
					reserve(t, s, epoch.Add(30*time.Second), items, true)
				}
				back := reserve(t, s, epoch.Add(time.Second), items, true) // 29 s back
				reserve(t, s, epoch.Add(time.Second), items, false)
				if err := s.Refund(context.Background(), items, back); err != nil {
					t.Fatal(err)
				}
				reserve(t, s, epoch.Add(31*time.Second), items, true)
				reserve(t, s, epoch.Add(31*time.Second), items, false)
			})
		}
	})
}

// TestGuardRefund: the guard gives a count back where it was taken:
// FailLocal's in memory, Redis's in Redis, and not while the breaker is
// open (Redis is down: the count stays). A failed refund is logged and
// counted, never the caller's error. A refund drops the key's cached
// denial, whose count fell.
func TestGuardRefund(t *testing.T) {
	z := newZone(t, "g", ratelimit.Rule{Window: time.Minute, Limit: 1, Algorithm: ratelimit.Fixed})
	items := []ratelimit.Item{{Zone: z, Key: "k", Refundable: true}}
	ctx := context.Background()

	var logged atomic.Int64
	down := newGuard(t, failingStore{}, guard.Options{OnError: guard.FailLocal, LogError: func(error, int64) { logged.Add(1) }})
	out := make([]ratelimit.Decision, 1)
	if ok, _ := down.Take(ctx, epoch, items, out); !ok || out[0].Receipt.At == 0 || out[0].Receipt.Remote {
		t.Fatalf("FailLocal: %+v, want admitted with a memory receipt", out[0])
	}
	if ratelimit.TakeAll(epoch, []ratelimit.Item{{Zone: z, Key: "k"}}, make([]ratelimit.Decision, 1)) {
		t.Fatal("FailLocal did not count in memory")
	}
	if err := down.Refund(ctx, items, out); err != nil {
		t.Fatal(err)
	}
	if !ratelimit.TakeAll(epoch, []ratelimit.Item{{Zone: z, Key: "k"}}, make([]ratelimit.Decision, 1)) {
		t.Fatal("the memory refund did not give the count back")
	}

	remote := []ratelimit.Decision{{Allowed: true, Receipt: ratelimit.Receipt{At: 1, Remote: true}}}
	failures := down.Stats().Failures
	if err := down.Refund(ctx, items, remote); err != nil || logged.Load() == 0 || down.Stats().Failures != failures+1 {
		t.Fatalf("failed refund: err %v, logged %d, stats %+v: want nil, logged and counted", err, logged.Load(), down.Stats())
	}

	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			store, _ := newStore(t, be.start(t))
			store.callerTime = true
			g := newGuard(t, store, guard.Options{})
			z := newZone(t, "g"+be.name, ratelimit.Rule{Window: time.Minute, Limit: 1, Algorithm: ratelimit.Fixed})
			items := []ratelimit.Item{{Zone: z, Key: "k", Refundable: true}}
			held := reserve(t, g, epoch, items, true)
			if d := reserve(t, g, epoch, items, false); d[0].RetryAfter <= 0 {
				t.Fatalf("denial %+v", d[0])
			}
			if g.Stats().Denials != 1 {
				t.Fatalf("%d cached denials, want 1", g.Stats().Denials)
			}
			if err := g.Refund(ctx, items, held); err != nil {
				t.Fatal(err)
			}
			if g.Stats().Denials != 0 {
				t.Fatal("the refund kept the key's cached denial")
			}
			reserve(t, g, epoch, items, true)
		})
	}
}

// failingStore fails every call.
type failingStore struct{}

func (failingStore) Take(context.Context, time.Time, []ratelimit.Item, []ratelimit.Decision) (bool, error) {
	return false, errFailing
}

func (failingStore) Refund(context.Context, []ratelimit.Item, []ratelimit.Decision) error {
	return errFailing
}

var errFailing = errorString("store down")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestRedisOOMReserve: Redis over its maxmemory refuses a reservation and
// writes nothing: the decision holds no receipt, so nothing is refunded
// later, and the guard counts it as out of memory.
func TestRedisOOMReserve(t *testing.T) {
	s := startSmallRedis(t)
	store, _ := newStore(t, s.Addr())
	z := newZone(t, "login", ratelimit.Rule{Window: time.Minute, Limit: 5, Algorithm: ratelimit.Fixed})
	items := []ratelimit.Item{{Zone: z, Key: "ip", Refundable: true}}
	ctx := context.Background()
	out := make([]ratelimit.Decision, 1)
	if ok, err := store.Take(ctx, time.Time{}, items, out); !ok || err != nil || out[0].Receipt.At == 0 {
		t.Fatalf("reserve: %v %v %+v", ok, err, out[0])
	}
	fillRedis(t, s)
	if ok, err := store.Take(ctx, time.Time{}, items, out); !ok || !errors.Is(err, ErrOutOfMemory) || out[0].Receipt.At != 0 {
		t.Fatalf("reserve over maxmemory: %v %v %+v, want ErrOutOfMemory and no receipt", ok, err, out[0])
	}
	st, err := store.Inspect(ctx, z, "ip", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Count != 1 {
		t.Fatalf("the key counts %d, want 1: a refused reservation wrote", st.Count)
	}
}

// TestRefundAfterForget: count_status across an operator's reset in
// memory. Five requests reserve the whole budget, the key is forgotten,
// five more are admitted from the fresh budget, and then the first five
// settle with a status not counted: their refunds give nothing back to
// the fresh count, so the next request is denied. The same after the key
// was evicted and came back.
func TestRefundAfterForget(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.Sliding, ratelimit.Strict, ratelimit.Fixed, ratelimit.Log} {
		t.Run(alg.String(), func(t *testing.T) {
			z := newZone(t, "login", ratelimit.Rule{Window: time.Minute, Limit: 5, Algorithm: alg})
			now := epoch.Add(time.Second)
			var before []ratelimit.Decision
			for range 5 {
				before = append(before, ratelimit.TakeReservedAt(z, "ip", now, 0))
			}
			if !z.Forget("ip") {
				t.Fatal("the key was not tracked")
			}
			for i := range 5 {
				if d := ratelimit.TakeReservedAt(z, "ip", now, 0); !d.Allowed {
					t.Fatalf("request %d after the reset denied: %+v", i+1, d)
				}
			}
			for i := range before {
				ratelimit.RefundAt(z, "ip", &before[i])
			}
			if d := ratelimit.TakeAt(z, "ip", now); d.Allowed {
				t.Fatalf("after the refunds of before the reset, a sixth request was admitted: %+v", d)
			}
		})
	}
}
