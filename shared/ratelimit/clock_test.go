package ratelimit

import (
	"math"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scriptReference is the reference with the Redis script's handling of a
// clock that goes back, which the zone must share: a bucket key counts at
// the start of the newest sub-window it was admitted in when the clock is
// before it; a log key at its newest timestamp still held, timestamps
// leaving for good once a request saw them out of the window. Only
// admissions write.
type scriptReference struct {
	*reference
	written bool
	newest  int64 // the newest sub-window admitted in (bucket algorithms)
	horizon int64 // Log: timestamps at or before it are gone
}

func newScriptReference(rule Rule) *scriptReference {
	return &scriptReference{reference: newReference(rule), horizon: math.MinInt64}
}

// take decides at t as the script would and returns the decision's
// allowed, remaining and retry-after.
func (r *scriptReference) take(t int64) (bool, int64, time.Duration) {
	span, w := int64(r.rule.SubWindow), int64(r.rule.Window)
	if r.rule.Algorithm == Log {
		live := r.admitted[:0]
		for _, ts := range r.admitted {
			if ts > r.horizon {
				live = append(live, ts)
			}
		}
		r.admitted = live
		if n := len(live); n > 0 && t < live[n-1] {
			t = live[n-1]
		}
		if t-w > r.horizon {
			r.horizon = t - w
		}
	} else if r.written && t/span < r.newest {
		t = r.newest * span
	}
	allowed, remaining := r.reference.take(t)
	if allowed {
		r.written, r.newest = true, t/span
		return true, remaining, 0
	}
	return false, remaining, time.Duration(r.earliest(t) - t)
}

var allAlgorithms = []Algorithm{Sliding, Strict, Fixed, Log}

var scriptRules = []Rule{
	{Window: 10 * time.Second, SubWindow: time.Second, Limit: 20},
	{Window: 10 * time.Second, SubWindow: 2 * time.Second, Limit: 7, Cost: 2},
	{Window: 3 * time.Second, SubWindow: 3 * time.Second, Limit: 4},
	{Window: 10 * time.Second, SubWindow: time.Second, Limit: 20, Algorithm: Strict},
	{Window: 6 * time.Second, SubWindow: 500 * time.Millisecond, Limit: 9, Algorithm: Strict, Cost: 3},
	{Window: 10 * time.Second, Limit: 20, Algorithm: Fixed},
	{Window: 10 * time.Second, Limit: 20, Algorithm: Log},
	{Window: 5 * time.Second, Limit: 6, Algorithm: Log, Cost: 2},
}

// TestClockBackMatchesScript replays traces whose clock goes back now and
// then, by up to two windows, and requires the decisions of the script's
// semantics: only admissions move a key's clock, and a cached denial never
// answers for a time before it or after an admission.
func TestClockBackMatchesScript(t *testing.T) {
	for _, rule := range scriptRules {
		for seed := int64(1); seed <= 6; seed++ {
			rng := rand.New(rand.NewSource(seed))
			z := newZone(t, "test", rule, Options{})
			ref := newScriptReference(rule)
			w := int64(rule.Window)
			rate := float64(rule.Limit) / rule.Window.Seconds() * (0.5 + rng.Float64()*3)
			at := start.UnixNano()
			for i := 0; i < 3000; i++ {
				if rng.Intn(40) == 0 {
					at -= rng.Int63n(2 * w)
				} else {
					at += int64(rng.ExpFloat64() / rate * 1e9)
				}
				got := TakeAt(z, "k", time.Unix(0, at))
				allowed, remaining, retry := ref.take(at)
				if got.Allowed != allowed || got.Remaining != remaining || got.RetryAfter != retry {
					t.Fatalf("%v seed %d request %d at +%v: zone %+v, script allowed=%v remaining=%d retry=%v",
						rule, seed, i, time.Duration(at-start.UnixNano()), got, allowed, remaining, retry)
				}
			}
		}
	}
}

// TestDeniedRequestWritesNothing is the case of #8 with several rules: a
// request denied by another zone must not move this zone's key to its
// sub-window, or a clock that then goes back counts the next admission in
// the wrong sub-window, and it stays counted a sub-window too long.
func TestDeniedRequestWritesNothing(t *testing.T) {
	a := newZone(t, "test", Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 2, Algorithm: Strict}, Options{})
	b := newZone(t, "test", Rule{Window: 10 * time.Second, Limit: 1, Algorithm: Fixed}, Options{})
	ref := newScriptReference(a.Rule())
	out := make([]Decision, 2)
	both := []Item{{Zone: a, Key: "k"}, {Zone: b, Key: "k"}}
	at := func(d time.Duration) time.Time { return start.Add(d) }
	if !TakeAll(at(ms(500)), both, out) {
		t.Fatal("the first request was denied")
	}
	ref.take(at(ms(500)).UnixNano())
	if TakeAll(at(ms(5500)), both, out) {
		t.Fatal("b admitted a second request in its window")
	}
	// The clock goes back to 2.5s; a alone admits, in sub-window 2.
	for _, d := range []time.Duration{ms(2500), ms(13500)} {
		got := TakeAt(a, "k", at(d))
		allowed, remaining, retry := ref.take(at(d).UnixNano())
		if got.Allowed != allowed || got.Remaining != remaining || got.RetryAfter != retry {
			t.Fatalf("at %v: %+v, script allowed=%v remaining=%d retry=%v", d, got, allowed, remaining, retry)
		}
	}
}

// TestCachedDenialAfterAdmission: a denial is cached until the key fits
// again; the key is admitted after that, and then the clock goes back
// into the cached interval. The cached answer is stale: the admission
// since changed the count.
func TestCachedDenialAfterAdmission(t *testing.T) {
	rule := Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 10}
	z := newZone(t, "test", rule, Options{})
	ref := newScriptReference(rule)
	steps := []time.Duration{ms(500), ms(500), ms(500), ms(500), ms(500), ms(500), ms(500), ms(500), ms(500), ms(500),
		ms(10050), // denied until 10.1s
		ms(10900), // admitted
		ms(10060), // back inside the cached denial
	}
	for i, d := range steps {
		got := TakeAt(z, "k", start.Add(d))
		allowed, remaining, retry := ref.take(start.Add(d).UnixNano())
		if got.Allowed != allowed || got.Remaining != remaining || got.RetryAfter != retry {
			t.Fatalf("step %d at %v: %+v, script allowed=%v remaining=%d retry=%v", i, d, got, allowed, remaining, retry)
		}
	}
}

// TestDecisionBoundsUnderClockSteps moves the clock forward and back by
// random amounts, small and large, to absurd times too, and checks that
// every decision stays in its bounds: 0 <= Remaining <= Limit and
// 0 <= RetryAfter, ResetAfter <= W+T. Headers are written from these
// numbers (the Traefik plugin indexes a table with them).
func TestDecisionBoundsUnderClockSteps(t *testing.T) {
	rules := append([]Rule{
		{Window: time.Hour, Limit: 100},
		{Window: MaxWindow, Limit: 3},
		{Window: MaxWindow, Limit: 3, Algorithm: Strict},
		{Window: MaxWindow, Limit: 3, Algorithm: Log},
	}, scriptRules...)
	for _, rule := range rules {
		for seed := int64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewSource(seed))
			z := newZone(t, "test", rule, Options{MaxKeys: 2})
			r := z.Rule()
			bound := r.Window + r.SubWindow
			w := int64(r.Window)
			at := start.UnixNano()
			for i := 0; i < 4000; i++ {
				switch n := rng.Intn(100); {
				case n < 70:
					at += rng.Int63n(w/10 + 1)
				case n < 90:
					at -= rng.Int63n(2*w + 1)
				case n < 94:
					at += rng.Int63n(math.MaxInt64/4) - math.MaxInt64/8
				case n < 96:
					at = rng.Int63n(2*w + 1) // about 1970
				case n < 98:
					at = math.MaxInt64 - rng.Int63n(2*w+1)
				default:
					at = start.UnixNano()
				}
				key := []string{"a", "b", "c"}[rng.Intn(3)]
				d := TakeAt(z, key, time.Unix(0, at))
				if d.Remaining < 0 || d.Remaining > r.Limit || d.RetryAfter < 0 || d.RetryAfter > bound ||
					d.ResetAfter < 0 || d.ResetAfter > bound || d.Allowed && d.RetryAfter != 0 || d.Limit != r.Limit {
					t.Fatalf("%v seed %d request %d at %d: %+v out of bounds (W+T %v)", rule, seed, i, at, d, bound)
				}
			}
		}
	}
}

// TestWindowBound: a window past MaxWindow is refused at load, saying the
// bound; windows up to it never panic, whatever the clock says.
func TestWindowBound(t *testing.T) {
	r := Rule{Window: 60 * 365 * 24 * time.Hour, Limit: 1}
	if err := r.Normalize(); err == nil || !strings.Contains(err.Error(), "too long (at most 87600h0m0s, 10 years)") {
		t.Fatalf("a 60-year window: %v", err)
	}
	for _, alg := range allAlgorithms {
		z := newZone(t, "test", Rule{Window: MaxWindow, Limit: 1, Algorithm: alg}, Options{})
		for _, at := range []int64{time.Now().UnixNano(), 0, -1, math.MaxInt64} {
			TakeAt(z, "k", time.Unix(0, at))
			TakeAt(z, "k", time.Unix(0, at)) // denied
		}
	}
}

// TestTakeAtRace takes one key from several goroutines on a shared clock
// that crosses a sub-window boundary every ten requests, so that requests
// admitted on the fast path meet others that move the key to the next
// sub-window; run with -race.
func TestTakeAtRace(t *testing.T) {
	z := newZone(t, "test", Rule{Window: 10 * time.Millisecond, SubWindow: time.Millisecond, Limit: MaxLimit}, Options{})
	var tick atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				TakeAt(z, "k", time.Unix(0, start.UnixNano()+tick.Add(1)*int64(100*time.Microsecond)))
			}
		}()
	}
	wg.Wait()
}
