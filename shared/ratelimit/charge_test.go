package ratelimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// chargeStore is a Store that charges too: Memory or a RedisStore.
type chargeStore interface {
	Store
	Charger
}

// chargeStores runs f against the in-memory store and the Redis store on
// miniredis and on a real redis-server, with the caller's clock.
func chargeStores(t *testing.T, f func(t *testing.T, s chargeStore, zone func(Rule) *Zone)) {
	t.Run("memory", func(t *testing.T) {
		f(t, Memory{}, func(r Rule) *Zone { return newZone(t, "cs", r) })
	})
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			addr := be.start(t)
			s, _ := newStore(t, addr)
			s.callerTime = true
			n := 0
			f(t, s, func(r Rule) *Zone {
				n++
				return newZone(t, "cs"+string(rune('a'+n)), r)
			})
		})
	}
}

var chargeRules = []Rule{
	{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 5},
	{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 5, Algorithm: Strict},
	{Window: time.Minute, Limit: 5, Algorithm: Fixed},
	{Window: time.Minute, Limit: 5, Algorithm: Log},
}

// TestDeferredCheckThenCharge: a Deferred check never counts; charges do,
// and the check denies once no room is left for one more.
func TestDeferredCheckThenCharge(t *testing.T) {
	chargeStores(t, func(t *testing.T, s chargeStore, zone func(Rule) *Zone) {
		for _, r := range chargeRules {
			t.Run(r.Algorithm.String(), func(t *testing.T) {
				z := zone(r)
				ctx := context.Background()
				items := []Item{{Zone: z, Key: "ip", Deferred: true}}
				out := make([]Decision, 1)
				now := epoch
				for i := 0; i < 20; i++ { // uncharged responses: never denied
					if ok, err := s.Take(ctx, now, items, out); !ok || err != nil || out[0].Remaining != 4 {
						t.Fatalf("check %d: allowed=%v err=%v %+v, want allowed with 4 remaining", i, ok, err, out[0])
					}
				}
				for i := 0; i < 5; i++ {
					if ok, err := s.Take(ctx, now, items, out); !ok || err != nil || out[0].Remaining != int64(4-i) {
						t.Fatalf("check before charge %d: allowed=%v err=%v %+v", i, ok, err, out[0])
					}
					if err := s.Charge(ctx, now, items); err != nil {
						t.Fatal(err)
					}
				}
				if ok, err := s.Take(ctx, now.Add(time.Second), items, out); ok || err != nil || out[0].RetryAfter <= 0 {
					t.Fatalf("after 5 charges: allowed=%v err=%v %+v, want denied with a Retry-After", ok, err, out[0])
				}
				later := now.Add(2*time.Minute + time.Second)
				if ok, err := s.Take(ctx, later, items, out); !ok || err != nil {
					t.Fatalf("two windows later: allowed=%v err=%v, want allowed", ok, err)
				}
			})
		}
	})
}

// TestDeferredMixedWithTake: in one request a Deferred item is checked
// and a plain one counted; a denial of either counts nothing.
func TestDeferredMixedWithTake(t *testing.T) {
	chargeStores(t, func(t *testing.T, s chargeStore, zone func(Rule) *Zone) {
		ctx := context.Background()
		login := zone(Rule{Window: time.Minute, Limit: 1, Algorithm: Fixed})
		all := zone(Rule{Window: time.Minute, Limit: 3, Algorithm: Fixed})
		items := []Item{{Zone: login, Key: "k", Deferred: true}, {Zone: all, Key: "k"}}
		out := make([]Decision, 2)
		for i := 0; i < 3; i++ {
			if ok, err := s.Take(ctx, epoch, items, out); !ok || err != nil {
				t.Fatalf("request %d: allowed=%v err=%v %+v", i, ok, err, out)
			}
			if out[0].Remaining != 0 || out[1].Remaining != int64(2-i) {
				t.Fatalf("request %d: %+v, want login untouched and all counted", i, out)
			}
		}
		if ok, _ := s.Take(ctx, epoch, items, out); ok || !out[0].Allowed || out[1].Allowed {
			t.Fatalf("4th request: allowed=%v %+v, want denied by the plain zone", ok, out)
		}
		// Charged, the login zone denies, and the plain zone is not counted.
		later := epoch.Add(time.Minute) // the next fixed window
		if err := s.Charge(ctx, later, items[:1]); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.Take(ctx, later, items, out); ok || out[0].Allowed {
			t.Fatalf("after a charge: allowed=%v %+v, want denied by the login zone", ok, out)
		}
		if ok, _ := s.Take(ctx, later, items[1:], out[:1]); !ok || out[0].Remaining != 2 {
			t.Fatalf("plain zone after the denial: allowed=%v %+v, want 2 remaining", ok, out[0])
		}
	})
}

// TestDeferredInFlightBound measures the over-admission that checking
// before and charging after allows: with one left, 8 requests of one key
// in flight at once all pass the check, so at most 8 counted responses are
// admitted; all 8 are charged, and the key is then denied until the count
// falls below the limit again (12 counted for a limit of 5).
func TestDeferredInFlightBound(t *testing.T) {
	chargeStores(t, func(t *testing.T, s chargeStore, zone func(Rule) *Zone) {
		for _, r := range chargeRules {
			t.Run(r.Algorithm.String(), func(t *testing.T) {
				z := zone(r)
				ctx := context.Background()
				items := []Item{{Zone: z, Key: "ip", Deferred: true}}
				for i := 0; i < 4; i++ {
					if err := s.Charge(ctx, epoch, items); err != nil {
						t.Fatal(err)
					}
				}
				const inFlight = 8
				var admitted atomic.Int64
				var checked, wg sync.WaitGroup
				checked.Add(inFlight)
				wg.Add(inFlight)
				for g := 0; g < inFlight; g++ {
					go func() {
						defer wg.Done()
						out := make([]Decision, 1)
						ok, err := s.Take(ctx, epoch, items, out)
						checked.Done()
						checked.Wait() // every request is in flight before any response
						if err == nil && ok {
							admitted.Add(1)
							if err := s.Charge(ctx, epoch, items); err != nil {
								t.Error(err)
							}
						}
					}()
				}
				wg.Wait()
				if got := admitted.Load(); got > inFlight || got < 1 {
					t.Fatalf("admitted %d of %d in flight with 1 left, want 1 to %d", got, inFlight, inFlight)
				}
				out := make([]Decision, 1)
				if ok, _ := s.Take(ctx, epoch, items, out); ok || out[0].Remaining != 0 {
					t.Fatalf("after the charges: allowed=%v %+v, want denied", ok, out[0])
				}
				t.Logf("%d of %d in flight admitted with 1 left; counted %d for a limit of %d", admitted.Load(), inFlight, 4+admitted.Load(), r.Limit)
			})
		}
	})
}

// TestChargeLogKeepsLimitNewest: charges over a Log zone's limit keep its
// memory at the limit and the key denied until the newest leave.
func TestChargeLogKeepsLimitNewest(t *testing.T) {
	z := newZone(t, "log", Rule{Window: time.Minute, Limit: 3, Algorithm: Log})
	items := []Item{{Zone: z, Key: "k", Deferred: true}}
	for i := 0; i < 10; i++ {
		ChargeAll(epoch.Add(time.Duration(i)*time.Second), items)
	}
	out := make([]Decision, 1)
	at := epoch.Add(time.Minute + 7*time.Second) // the 8th charge leaves then
	if TakeAll(at.Add(-time.Millisecond), items, out) {
		t.Fatalf("before the 8th charge left: admitted %+v", out[0])
	}
	if out[0].RetryAfter != time.Millisecond {
		t.Fatalf("RetryAfter %v, want 1ms", out[0].RetryAfter)
	}
	if !TakeAll(at, items, out) {
		t.Fatalf("once the 8th charge left: denied %+v", out[0])
	}
}

// TestGuardChargeFailure: a failed charge is an error for the log and the
// breaker, never for the caller, and FailLocal counts it in memory.
func TestGuardChargeFailure(t *testing.T) {
	z := newZone(t, "g", Rule{Window: time.Minute, Limit: 1, Algorithm: Fixed})
	var logged atomic.Int64
	g, err := NewGuard(failingCharger{}, GuardOptions{OnError: FailLocal, LogError: func(error, int64) { logged.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	items := []Item{{Zone: z, Key: "k", Deferred: true}}
	if err := g.Charge(context.Background(), epoch, items); err != nil {
		t.Fatalf("Charge = %v, want nil", err)
	}
	if logged.Load() != 1 || g.Stats().Failures != 1 {
		t.Fatalf("logged %d, stats %+v: want the failure logged and counted", logged.Load(), g.Stats())
	}
	out := make([]Decision, 1)
	if TakeAll(epoch, items, out) {
		t.Fatal("FailLocal did not charge the memory zone")
	}
}

type failingCharger struct{}

func (failingCharger) Take(context.Context, time.Time, []Item, []Decision) (bool, error) {
	return false, errFailing
}

func (failingCharger) Charge(context.Context, time.Time, []Item) error { return errFailing }

var errFailing = errorString("store down")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestRedisOOMCharge: Redis over its maxmemory refuses a charge and
// writes nothing; the store says ErrOutOfMemory, and the guard logs it
// and counts it without tripping its breaker or failing the caller. A
// charge of a key that exists is refused too: the guarded first write is
// checked whatever the key.
func TestRedisOOMCharge(t *testing.T) {
	s := startSmallRedis(t)
	store, _ := newStore(t, s.Addr())
	z := newZone(t, "login", Rule{Window: time.Minute, Limit: 5, Algorithm: Fixed})
	items := []Item{{Zone: z, Key: "ip", Deferred: true}}
	ctx := context.Background()
	if err := store.Charge(ctx, time.Time{}, items); err != nil {
		t.Fatal(err)
	}
	fillRedis(t, s)
	if err := store.Charge(ctx, time.Time{}, items); !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("charge over maxmemory: %v, want ErrOutOfMemory", err)
	}
	var logged atomic.Int64
	g := newGuard(t, store, GuardOptions{Probe: store.Ping, ProbeInterval: time.Hour, LogError: func(err error, _ int64) {
		if errors.Is(err, ErrOutOfMemory) {
			logged.Add(1)
		}
	}})
	if err := g.Charge(ctx, time.Time{}, items); err != nil {
		t.Fatalf("guard charge: %v, want nil", err)
	}
	if st := g.Stats(); st.OutOfMemory != 1 || st.Failures != 0 || st.Open || logged.Load() != 1 {
		t.Fatalf("stats %+v, logged %d: want one out-of-memory charge logged, no failure, breaker closed", st, logged.Load())
	}
	st, err := store.Inspect(ctx, z, "ip", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Count != 1 {
		t.Fatalf("the key counts %d, want 1: a refused charge wrote", st.Count)
	}
}
