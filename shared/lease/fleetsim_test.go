package lease

import (
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestFleetSimulation: 100 instances send 1,000,000 decisions a second on
// one key (10 instances 100,000 under -race), for 3 simulated seconds,
// against one redis-server, and print the script calls per second and how
// much the fleet admits against the per-request decisions of the same
// rule on the same trace.
//
// Assumptions: the requests arrive at a constant rate, spread evenly over
// the instances (instance i takes every hundredth, or tenth); the network takes no
// time (a real round trip only shortens each lease, whose time counts from
// the moment its call is sent); every clock agrees with the server's, and
// Redis expires keys on the simulated clock too (simExpiry), so that the
// figures do not depend on how fast the machine runs the simulation. The
// per-request reference is the in-memory zone of the same rule, which the
// ratelimit package's differential holds equal to the script.
//
// With every request allowed, the calls per second must stay under 1% of
// the decisions. At twice the limit with the strict algorithm, no window of
// W may hold more than the limit, and the fleet must admit at least 97% of
// what per-request decisions admit.
func TestFleetSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("3 million simulated decisions: not under -short")
	}
	// Redis's keys expire on the simulated clock (simExpiry): the
	// simulation holds at any speed. -race slows it ten to thirty times:
	// it then simulates a tenth of the fleet at a tenth of the rate, the
	// same rate on each instance, so the same leases on each.
	instances, rate := 100, 1_000_000
	if raceEnabled {
		instances, rate = 10, 100_000
	}
	const duration = 3 * time.Second
	for _, c := range []struct {
		name string
		rule ratelimit.Rule
	}{
		{"all allowed", ratelimit.Rule{Window: time.Second, SubWindow: 100 * time.Millisecond, Limit: 1 << 30}},
		{"strict at twice the limit", ratelimit.Rule{Window: time.Second, SubWindow: 100 * time.Millisecond, Limit: int64(rate / 2), Algorithm: ratelimit.Strict}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFleet(t, []string{redistest.Start(t).Addr()}, c.rule, instances, true)
			ref, err := ratelimit.NewZone("ref", c.rule, ratelimit.Options{SweepInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			e := newExact(t, f)
			n := int(duration/time.Second) * rate
			gap := time.Second / time.Duration(rate)
			var admitted, reference int64
			start := time.Now()
			for i := 0; i < n; i++ {
				f.clock.advance(f.clock.now.Add(gap))
				if f.take(i%instances, "hot").Allowed {
					admitted++
					e.times = append(e.times, f.clock.now.UnixMicro())
				}
				if ratelimit.TakeAt(ref, "hot", f.clock.now).Allowed {
					reference++
				}
			}
			elapsed := time.Since(start)
			var st Stats
			for _, tb := range f.tables {
				s := tb.Stats()
				st.Leases, st.Granted, st.Returned, st.Saved = st.Leases+s.Leases, st.Granted+s.Granted, st.Returned+s.Returned, st.Saved+s.Saved
			}
			callsPerSecond := float64(f.runner.Calls()) / duration.Seconds()
			most := e.maxInWindow()
			t.Logf("%s: %d instances, %d decisions/s for %v (simulated in %v): %.0f script calls/s (%.5f per decision); admitted %d, per-request %d (%.4f); most in any window %d of limit %d (%.4f); leases %d, units granted %d, given back %d, admitted from leases %d; keys expired on the simulated clock %d",
				c.name, instances, rate, duration, elapsed.Round(time.Millisecond), callsPerSecond, callsPerSecond/float64(rate),
				admitted, reference, float64(admitted)/float64(reference), most, c.rule.Limit, float64(most)/float64(c.rule.Limit),
				st.Leases, st.Granted, st.Returned, st.Saved, f.runner.Expired())
			if callsPerSecond > float64(rate)/100 {
				t.Errorf("%.0f calls/s for %d decisions/s: more than 1%%", callsPerSecond, rate)
			}
			if c.rule.Algorithm == ratelimit.Strict {
				if most > c.rule.Limit {
					t.Errorf("a window of W held %d admissions, over the limit %d", most, c.rule.Limit)
				}
				if float64(admitted) < 0.97*float64(reference) {
					t.Errorf("admitted %d, under 97%% of per-request's %d", admitted, reference)
				}
			}
		})
	}
}
