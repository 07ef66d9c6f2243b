package ratelimit

import (
	"math/rand"
	"time"
)

// reference decides from the list of admitted requests, straight from the
// definitions in DESIGN.md, with no incremental state. The zone must agree
// with it on every decision.
type reference struct {
	rule     Rule
	admitted []int64 // one timestamp per unit of cost, oldest first
}

func newReference(rule Rule) *reference {
	if err := rule.Normalize(); err != nil {
		panic(err)
	}
	return &reference{rule: rule}
}

// count returns the count at t of the admitted requests.
func (r *reference) count(t int64) float64 {
	w, span := int64(r.rule.Window), int64(r.rule.SubWindow)
	k := w / span
	c := t / span
	var inside, leaving float64
	for _, ts := range r.admitted {
		switch {
		case r.rule.Algorithm == Log:
			if ts > t-w && ts <= t {
				inside++
			}
		case ts/span > c-k && ts/span <= c:
			inside++
		case ts/span == c-k:
			leaving++
		}
	}
	switch r.rule.Algorithm {
	case Sliding:
		return inside + leaving*float64((c+1)*span-t)/float64(span)
	case Strict:
		return inside + leaving
	}
	return inside
}

func (r *reference) fits(t int64) bool {
	return r.count(t)+float64(r.rule.Cost) <= float64(r.rule.Limit)
}

// take decides at t and records the request when it is admitted.
func (r *reference) take(t int64) (allowed bool, remaining int64) {
	c := r.count(t)
	cost := float64(r.rule.Cost)
	if c+cost > float64(r.rule.Limit) {
		if c < float64(r.rule.Limit) {
			remaining = int64(float64(r.rule.Limit) - c)
		}
		return false, remaining
	}
	for i := int64(0); i < r.rule.Cost; i++ {
		r.admitted = append(r.admitted, t)
	}
	r.forget(t)
	return true, int64(float64(r.rule.Limit) - c - cost)
}

// forget drops what can no longer count, to keep the reference fast.
func (r *reference) forget(t int64) {
	horizon := t - int64(r.rule.Window) - int64(r.rule.SubWindow)
	i := 0
	for i < len(r.admitted) && r.admitted[i] < horizon {
		i++
	}
	r.admitted = r.admitted[i:]
}

// earliest returns the first time at or after t at which a request fits,
// by bisection: with no new admissions the count never rises.
func (r *reference) earliest(t int64) int64 {
	lo, hi := t, t+int64(r.rule.Window)+int64(r.rule.SubWindow)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if r.fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// trace returns n arrival times from t0: Poisson at rate per second, or,
// when bursty, bursts of burst requests within a millisecond arriving as a
// Poisson process at rate/burst.
func trace(rng *rand.Rand, t0 int64, n int, rate float64, burst int) []int64 {
	out := make([]int64, 0, n)
	t := float64(t0)
	for len(out) < n {
		if burst <= 1 {
			t += rng.ExpFloat64() / rate * 1e9
			out = append(out, int64(t))
			continue
		}
		t += rng.ExpFloat64() / (rate / float64(burst)) * 1e9
		for j := 0; j < burst && len(out) < n; j++ {
			at := int64(t) + int64(j)*int64(time.Millisecond)/int64(burst)
			if len(out) > 0 && at < out[len(out)-1] {
				at = out[len(out)-1] // bursts may overlap; time never runs back
			}
			out = append(out, at)
		}
	}
	return out
}

// onOff returns n arrival times from t0 of a Poisson process whose rate
// switches between 1.8x and 0.2x the mean rate (per second) in periods of
// exponential length with mean period: the bursty traffic of real clients.
func onOff(rng *rand.Rand, t0 int64, n int, rate float64, period time.Duration) []int64 {
	out := make([]int64, 0, n)
	t := float64(t0)
	high := true
	switchAt := t + rng.ExpFloat64()*float64(period)
	for len(out) < n {
		r := rate * 0.2
		if high {
			r = rate * 1.8
		}
		next := t + rng.ExpFloat64()/r*1e9
		if next > switchAt {
			// Memoryless: restart the draw at the switch with the new rate.
			t, high = switchAt, !high
			switchAt = t + rng.ExpFloat64()*float64(period)
			continue
		}
		t = next
		out = append(out, int64(t))
	}
	return out
}

// maxInWindow returns the most timestamps in any interval (s-W, s] of the
// sorted admitted times: the over-admission users fear.
func maxInWindow(admitted []int64, window int64) int {
	best, lo := 0, 0
	for hi := range admitted {
		for admitted[lo] <= admitted[hi]-window {
			lo++
		}
		if n := hi - lo + 1; n > best {
			best = n
		}
	}
	return best
}
