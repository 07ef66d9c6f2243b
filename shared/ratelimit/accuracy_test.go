package ratelimit

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// accuracy is how one algorithm did on one trace.
type accuracy struct {
	peak       float64 // most admitted in any window of length W, over N
	throughput float64 // admitted over what an ideal limiter admits
}

// measure replays times (sorted) through a fresh zone for rule.
func measure(t testing.TB, rule Rule, times []int64) accuracy {
	z := newZone(t, "test", rule, Options{})
	var admitted []int64
	for _, at := range times {
		if TakeAt(z, "k", time.Unix(0, at)).Allowed {
			admitted = append(admitted, at)
		}
	}
	span := float64(times[len(times)-1] - times[0])
	ideal := span / float64(rule.Window) * float64(rule.Limit)
	if offered := float64(len(times)); offered < ideal {
		ideal = offered
	}
	return accuracy{
		peak:       float64(maxInWindow(admitted, int64(rule.Window))) / float64(rule.Limit),
		throughput: float64(len(admitted)) / ideal,
	}
}

// TestAccuracyReport prints, with -v, the accuracy table of docs/algorithms.md and
// holds the algorithms to their goals. The traces are seeded: the figures
// are the same on every run.
func TestAccuracyReport(t *testing.T) {
	const limit = 100
	window := time.Minute
	type variant struct {
		name string
		rule Rule
	}
	variants := []variant{
		{"log", Rule{Window: window, Limit: limit, Algorithm: Log}},
		{"fixed", Rule{Window: window, Limit: limit, Algorithm: Fixed}},
		{"sliding k=5", Rule{Window: window, SubWindow: window / 5, Limit: limit}},
		{"sliding k=10", Rule{Window: window, SubWindow: window / 10, Limit: limit}},
		{"sliding k=30", Rule{Window: window, SubWindow: window / 30, Limit: limit}},
		{"strict k=5", Rule{Window: window, SubWindow: window / 5, Limit: limit, Algorithm: Strict}},
		{"strict k=10", Rule{Window: window, SubWindow: window / 10, Limit: limit, Algorithm: Strict}},
		{"strict k=30", Rule{Window: window, SubWindow: window / 30, Limit: limit, Algorithm: Strict}},
	}
	loads := []float64{0.8, 1, 1.5, 3}
	// poisson: independent arrivals. on/off: the rate switches between 1.8x
	// and 0.2x the mean every W/5 on average. clumps: clumps of 10
	// requests within a millisecond, the worst case for weighting a
	// sub-window as if its requests were spread evenly.
	shapes := []struct {
		name string
		gen  func(rng *rand.Rand, n int, rate float64) []int64
	}{
		{"poisson", func(rng *rand.Rand, n int, rate float64) []int64 {
			return trace(rng, start.UnixNano(), n, rate, 1)
		}},
		{"on/off", func(rng *rand.Rand, n int, rate float64) []int64 {
			return onOff(rng, start.UnixNano(), n, rate, window/5)
		}},
		{"clumps", func(rng *rand.Rand, n int, rate float64) []int64 {
			return trace(rng, start.UnixNano(), n, rate, 10)
		}},
	}

	var b strings.Builder
	fmt.Fprintf(&b, "peak = most admitted in any %v / N; thr = admitted / ideal (N=%d, 200 windows per trace)\n", window, limit)
	fmt.Fprintf(&b, "%-13s", "algorithm")
	for _, s := range shapes {
		for _, l := range loads {
			fmt.Fprintf(&b, " | %-7s %.1fx", s.name, l)
		}
	}
	b.WriteString("\n")
	for _, v := range variants {
		fmt.Fprintf(&b, "%-13s", v.name)
		for si, s := range shapes {
			for li, l := range loads {
				rng := rand.New(rand.NewSource(int64(100*si + li)))
				rate := l * limit / window.Seconds()
				n := int(rate * 200 * window.Seconds())
				a := measure(t, v.rule, s.gen(rng, n, rate))
				fmt.Fprintf(&b, " | %.2f / %.2f", a.peak, a.throughput)
				checkAccuracyGoal(t, v.name, s.name, l, a)
			}
		}
		b.WriteString("\n")
	}
	t.Log("\n" + b.String())
}

// checkAccuracyGoal holds the algorithms to the goals docs/algorithms.md states:
// strict and log never exceed N in any window; sliding with 10
// sub-windows stays within 5% of N with 95% of the ideal throughput at
// 1.5x the limit on Poisson traffic. On bursty traffic it does not (the
// table shows by how much), which docs/algorithms.md says.
func checkAccuracyGoal(t *testing.T, name, shape string, load float64, a accuracy) {
	t.Helper()
	switch {
	case strings.HasPrefix(name, "strict"), name == "log":
		if a.peak > 1 {
			t.Errorf("%s %s %.1fx: peak %.3f, must never exceed 1", name, shape, load, a.peak)
		}
	case name == "sliding k=10" && load == 1.5 && shape == "poisson":
		if a.peak > 1.05 || a.throughput < 0.95 {
			t.Errorf("%s %s %.1fx: peak %.3f throughput %.3f, goal <= 1.05 and >= 0.95", name, shape, load, a.peak, a.throughput)
		}
	}
}
