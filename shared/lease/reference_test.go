package lease

import (
	"sort"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// exact checks a fleet's admissions against the rule as per-request
// decisions apply it. Each admission is placed where Redis would count a
// request decided at that moment: in the sub-window of the server's time,
// or in the key's newest one when the server's clock went back (the script
// clamps). After each, the rule's count of what was admitted (not of what
// Redis counted: leases count more) must be within the limit, exactly as
// the script computes it: the sub-windows inside the window plus the
// leaving one, weighted (sliding), whole (strict) or not at all (fixed).
// For strict and fixed that is the most any window of W can hold.
type exact struct {
	f        *fleet
	stepped  bool // the server's clock stepped back
	t        testing.TB
	rule     ratelimit.Rule
	T, k     int64 // the sub-window in µs, sub-windows per window
	admitted map[string]map[int64]int64
	// newest reads the newest sub-window Redis holds for a key (false: no
	// key): where the script clamps a request when the clock went back.
	newest func(key string) (int64, bool)
	times  []int64 // every admission's server time, clamped, in µs
	n      int64
	// A reset of a key starts its count afresh. Until the leases granted
	// before it meet Redis again, their holders may spend them without
	// the new count knowing yet: until the last of them expires (by the
	// instances' clock, oldUntil), Redis may count less than was
	// admitted, and a window that holds the reset's sub-window (resetAt)
	// may admit over the limit by at most what those leases held at the
	// reset (slack). excess is the most such a window went over; resets
	// counts the resets.
	resetAt  map[string]int64
	oldUntil map[string]time.Time
	slack    map[string]int64
	excess   int64
	resets   int
}

// reset starts key afresh at server time now, with held units of leases
// granted before it that the fresh count does not know of, which may be
// spent until the local time until (none, for an operator's reset).
func (e *exact) reset(key string, now time.Time, held int64, until time.Time) {
	c := now.UnixMicro() / e.T
	e.admitted[key] = map[int64]int64{}
	e.resetAt[key], e.slack[key], e.oldUntil[key] = c, held, until
	e.resets++
}

func newExact(t testing.TB, f *fleet) *exact {
	r := f.zone.Rule()
	return &exact{f: f, t: t, rule: r, T: r.SubWindow.Microseconds(), k: int64(r.Window / r.SubWindow),
		admitted: map[string]map[int64]int64{}, newest: f.newest,
		resetAt: map[string]int64{}, slack: map[string]int64{}, oldUntil: map[string]time.Time{}}
}

// at returns the sub-window and time, in µs, at which Redis counts a
// request on key at server time now.
func (e *exact) at(key string, now time.Time) (int64, int64) {
	t := now.UnixMicro()
	c := t / e.T
	if n, ok := e.newest(key); ok && c < n {
		return n, n * e.T
	}
	return c, t
}

// admit records an admission on key at server time now and fails the test
// if Redis counted less than was admitted in its sub-window, or, while the
// server's clock has not stepped back, if the rule's count of the
// admissions exceeds the limit.
func (e *exact) admit(key string, now time.Time) {
	c, t := e.at(key, now)
	m := e.admitted[key]
	if m == nil {
		m = map[int64]int64{}
		e.admitted[key] = m
	}
	m[c] += e.rule.Cost
	e.n++
	e.times = append(e.times, t)
	r, reset := e.resetAt[key]
	// After the old leases expire, what they spent is counted in the new
	// count, in one sub-window: theirs, or the newest when the server's
	// clock went back below it, where this check does not place each
	// admission.
	old := reset && (e.f.clock.now.Before(e.oldUntil[key]) || e.stepped && c <= r+e.k)
	if _, counted, ok := e.f.bucket(key, c); (!ok || counted < m[c]) && !old {
		e.t.Fatalf("key %q at %dµs: %d admitted in sub-window %d, Redis counts %d there", key, t, m[c], c, counted)
	}
	if reset && !old && !e.stepped && c <= r+e.k {
		// The old leases are over: what they spent after the reset is
		// counted in the reset's sub-window, as everything admitted since.
		if _, counted, ok := e.f.bucket(key, r); ok && counted >= 0 && counted < m[r] {
			e.t.Fatalf("key %q at %dµs: %d admitted in sub-window %d since its reset, Redis counts %d there once the leases of before ended", key, t, m[r], r, counted)
		}
	}
	if e.stepped {
		// A step back clamps the script to its newest sub-window, whose
		// weighted count then rises: what was counted before the step
		// fits, and what a lease counted then is spent within it.
		return
	}
	var count int64
	lo := c - e.k + 1
	if e.rule.Algorithm == ratelimit.Fixed {
		lo = c
	}
	for b := lo; b <= c; b++ {
		count += m[b]
	}
	switch e.rule.Algorithm {
	case ratelimit.Strict:
		count += m[c-e.k]
	case ratelimit.Sliding:
		x := m[c-e.k] * ((c+1)*e.T - t)
		count += (x + e.T - 1) / e.T
	}
	if reset && c <= r+e.k && count > e.rule.Limit {
		// The window holds the reset's sub-window: leases of the old
		// count may have been spent in it.
		if over := count - e.rule.Limit; over > e.excess {
			e.excess = over
		}
		if count <= e.rule.Limit+e.slack[key] {
			return
		}
	}
	if count > e.rule.Limit {
		var hist []int64
		for b := c - e.k - 1; b <= c; b++ {
			hist = append(hist, m[b])
		}
		e.t.Fatalf("key %q at %dµs (sub-window %d): the admissions count %d, over the limit %d; sub-windows %d..%d admitted %v", key, t, c, count, e.rule.Limit, c-e.k-1, c, hist)
	}
}

// maxInWindow returns the most admissions in any span of the window.
func (e *exact) maxInWindow() int64 {
	w := e.rule.Window.Microseconds()
	sort.Slice(e.times, func(i, j int) bool { return e.times[i] < e.times[j] })
	best, lo := 0, 0
	for hi := range e.times {
		for e.times[hi]-e.times[lo] >= w {
			lo++
		}
		if hi-lo+1 > best {
			best = hi - lo + 1
		}
	}
	return int64(best)
}
