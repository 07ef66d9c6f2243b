package lease

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// step is one request of a trace: after gap, instance on key; skew, when
// set, steps the server's clock by that much first.
type step struct {
	gap      time.Duration
	instance int
	key      string
	skew     time.Duration
	// reset makes the step a reset of key instead of a request: Redis
	// loses the key, or, with forget, an operator deletes it through
	// instance, which forgets its own lease first (as Caddy's admin API
	// does).
	reset, forget bool
}

// run plays steps on f, checking every admission against e, and returns
// how many were admitted.
func run(t testing.TB, f *fleet, e *exact, steps []step) int64 {
	var admitted int64
	for _, s := range steps {
		f.clock.advance(f.clock.now.Add(s.gap))
		f.clock.skew += s.skew
		if s.skew < 0 {
			e.stepped = true
		}
		server := f.clock.now.Add(f.clock.skew)
		if s.reset {
			f.reset(t, e, s, server)
			continue
		}
		d := f.take(s.instance, s.key)
		if d.Allowed {
			e.admit(s.key, server)
			admitted++
		}
		if d.Remaining < 0 || d.Remaining > d.Limit {
			t.Fatalf("remaining %d out of 0..%d: %+v", d.Remaining, d.Limit, d)
		}
	}
	return admitted
}

// hotTrace is n requests spread over instances at rate per second, on
// keys keys (the first takes half of them).
func hotTrace(rng *rand.Rand, n, instances, keys int, rate float64) []step {
	steps := make([]step, n)
	for i := range steps {
		gap := time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		key := "hot"
		if keys > 1 && rng.Intn(2) == 0 {
			key = fmt.Sprint("k", rng.Intn(keys-1))
		}
		steps[i] = step{gap: gap, instance: rng.Intn(instances), key: key}
	}
	return steps
}

// TestColdKeysNeverLease: a key seen fewer than HotAfter times per
// sub-window on an instance costs one call per request, as without
// leases, and no lease is asked.
func TestColdKeysNeverLease(t *testing.T) {
	r := ratelimit.Rule{Window: time.Second, SubWindow: 100 * time.Millisecond, Limit: 1000}
	f := newFleet(t, []string{redistest.Start(t).Addr()}, r, 1, true)
	e := newExact(t, f)
	var steps []step
	for i := 0; i < 600; i++ {
		// Six requests per sub-window on each of 20 keys, two fewer than
		// make a key hot.
		steps = append(steps, step{gap: 100 * time.Millisecond / 120, key: fmt.Sprint("k", i%20)})
	}
	if n := run(t, f, e, steps); n != 600 {
		t.Fatalf("admitted %d of 600", n)
	}
	if st := f.tables[0].Stats(); st.Leases != 0 || f.runner.Calls() != 600 {
		t.Fatalf("cold keys: %d calls for 600 requests, %+v: want one call each and no lease", f.runner.Calls(), st)
	}
}

// TestHotKeyLeases: three instances on one hot key, every request
// allowed: at most one call in 16 requests, and once the leases end and
// give back what they left, Redis counts exactly what was admitted.
func TestHotKeyLeases(t *testing.T) {
	for _, be := range simBackends {
		t.Run(be.name, func(t *testing.T) {
			r := ratelimit.Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 1 << 30}
			f := newFleet(t, be.addrs(t), r, 3, true)
			e := newExact(t, f)
			steps := hotTrace(rand.New(rand.NewSource(1)), 30000, 3, 1, 30000)
			n := run(t, f, e, steps)
			calls := f.runner.Calls()
			if n != 30000 {
				t.Fatalf("admitted %d of 30000", n)
			}
			var st Stats
			for _, tb := range f.tables {
				s := tb.Stats()
				st.Leases, st.Granted, st.Returned, st.Saved = st.Leases+s.Leases, st.Granted+s.Granted, st.Returned+s.Returned, st.Saved+s.Saved
			}
			t.Logf("30000 requests, 3 instances: %d script calls (%.4f per request), %+v", calls, float64(calls)/30000, st)
			if calls*16 > 30000 {
				t.Fatalf("%d calls for 30000 requests: more than one in 16", calls)
			}
			// Every lease ends within a sub-window and gives back what it
			// left: then Redis counts what was admitted, no more.
			f.clock.advance(f.clock.now.Add(2 * time.Second))
			f.close()
			d := f.take(0, "hot")
			if want := r.Limit - n - 1; d.Remaining != want {
				t.Fatalf("after the leases ended Redis has %d remaining, want %d (limit - admitted - this request)", d.Remaining, want)
			}
		})
	}
}

// TestDifferentialLeases: random traces over several instances and keys,
// at and past the limit, with the server's clock stepping back and keys
// reset (Redis loses one, or an operator deletes one through an
// instance) while leases on them are out, every bucket algorithm: with
// leases on, every admission fits the rule as per-request decisions apply
// it, a reset starting one fresh budget (over it by at most what the
// leases held at the reset, and the test reports by how much), and the
// fleet admits nearly as much as with leases off on the same trace. It
// runs on redis-server, and on a three-master Redis Cluster the first
// seed of each rule: the cluster routes the same calls, so more of its
// traces would test no more, and each costs round trips that a busy
// machine makes slow.
func TestDifferentialLeases(t *testing.T) {
	// miniredis runs the script's general path, as TestHotKeyLeases shows,
	// but too slowly for traces of this length.
	backends := []struct {
		name  string
		addrs func(t *testing.T) []string
	}{
		simBackends[1],
		{"cluster", func(t *testing.T) []string { return redistest.Cluster(t) }},
	}
	rules := []ratelimit.Rule{
		{Window: 10 * time.Second, SubWindow: time.Second, Limit: 200},
		{Window: 10 * time.Second, SubWindow: time.Second, Limit: 200, Algorithm: ratelimit.Strict},
		{Window: 10 * time.Second, Limit: 200, Algorithm: ratelimit.Fixed},
		{Window: 10 * time.Second, SubWindow: 2500 * time.Millisecond, Limit: 37, Algorithm: ratelimit.Strict, Cost: 2},
	}
	seeds := 3
	if testing.Short() || raceEnabled {
		seeds = 1
	}
	resets, excess := 0, int64(0)
	defer func() {
		t.Logf("%d resets with leases out: a window holding a reset admitted at most %d over the limit", resets, excess)
	}()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			addrs := be.addrs(t)
			for ri, r := range rules {
				n := seeds
				if be.name == "cluster" {
					n = 1
				}
				for seed := int64(1); seed <= int64(n); seed++ {
					rng := rand.New(rand.NewSource(seed*100 + int64(ri)))
					// Between half and three times the limit, on 1 to 3 keys.
					if err := r.Normalize(); err != nil {
						t.Fatal(err)
					}
					rate := float64(r.Limit/r.Cost) / r.Window.Seconds() * (0.5 + 2.5*rng.Float64())
					steps := hotTrace(rng, 3000, 1+rng.Intn(5), 1+rng.Intn(3), rate)
					for i := range steps {
						if rng.Intn(400) == 0 {
							steps[i].skew = -time.Duration(rng.Int63n(int64(2 * r.Window)))
						}
					}
					// Resets come from a generator of their own, so that
					// the trace is otherwise what it was without them.
					xrng := rand.New(rand.NewSource(seed*100 + int64(ri) + 7))
					for i := range steps {
						if xrng.Intn(150) == 0 {
							steps[i].reset, steps[i].forget = true, xrng.Intn(2) == 0
						}
					}
					name := fmt.Sprintf("%s-%d-%d", r.Algorithm, ri, seed)
					zoneRule := r
					on := newFleet(t, addrs, zoneRule, 5, true)
					e := newExact(t, on)
					admittedOn := run(t, on, e, steps)
					on.close()
					resets += e.resets
					if e.excess > excess {
						excess = e.excess
					}
					off := newFleet(t, addrs, zoneRule, 5, false)
					admittedOff := run(t, off, newExact(t, off), steps)
					t.Logf("%s: %d requests at %.0f/s: leases on admitted %d, off %d (%.3f), %d and %d calls",
						name, len(steps), rate, admittedOn, admittedOff, float64(admittedOn)/float64(admittedOff), on.runner.Calls(), off.runner.Calls())
					if float64(admittedOn) < 0.9*float64(admittedOff) {
						t.Errorf("%s: leases admitted %d, per request %d: more than 10%% under", name, admittedOn, admittedOff)
					}
				}
			}
		})
	}
}
