// Package scenario holds the core scenarios that the yaegi harness runs
// through the interpreter and, for comparison, compiled. Each scenario
// returns an error describing the first behaviour that differs from the
// expected one.
package scenario

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Names lists the scenarios in the order Run runs them.
var Names = []string{"limit", "retry-after", "algorithms", "multi-rule", "concurrency", "max-keys", "take-at-common-case", "restore-twice"}

// Run runs the named scenario.
func Run(name string) error {
	switch name {
	case "limit":
		return limitEnforced()
	case "retry-after":
		return retryAfterExact()
	case "algorithms":
		return algorithms()
	case "multi-rule":
		return multiRule()
	case "concurrency":
		return concurrency()
	case "max-keys":
		return maxKeys()
	case "take-at-common-case":
		return takeAtCommonCase()
	case "restore-twice":
		return restoreTwice()
	}
	return fmt.Errorf("unknown scenario %q", name)
}

var epoch = time.Unix(1700000000, 0)

func newZone(rule ratelimit.Rule, maxKeys int) (*ratelimit.Zone, error) {
	return ratelimit.NewZone("scenario", rule, ratelimit.Options{MaxKeys: maxKeys, SweepInterval: -1})
}

// limitEnforced: 20 per minute admits 20 with falling Remaining, then denies.
func limitEnforced() error {
	z, err := newZone(ratelimit.Rule{Window: time.Minute, Limit: 20}, 0)
	if err != nil {
		return err
	}
	defer z.Close()
	for i := 0; i < 22; i++ {
		d := ratelimit.TakeAt(z, "client", epoch.Add(time.Duration(i)*time.Millisecond))
		if i < 20 {
			if !d.Allowed || d.Remaining != int64(19-i) {
				return fmt.Errorf("request %d: got %+v, want allowed with %d remaining", i+1, d, 19-i)
			}
			continue
		}
		if d.Allowed || d.RetryAfter <= 0 || d.Remaining != 0 || d.Limit != 20 {
			return fmt.Errorf("request %d: got %+v, want denied with a retry-after", i+1, d)
		}
	}
	if d := ratelimit.TakeAt(z, "other", epoch); !d.Allowed {
		return errors.New("a second key was limited by the first key's requests")
	}
	return nil
}

// retryAfterExact: a denied request's RetryAfter is the exact moment the
// next one passes, for every algorithm.
func retryAfterExact() error {
	algs := []ratelimit.Algorithm{ratelimit.Sliding, ratelimit.Strict, ratelimit.Fixed, ratelimit.Log}
	for _, alg := range algs {
		rule := ratelimit.Rule{Window: 10 * time.Second, Limit: 5, Algorithm: alg}
		z, err := newZone(rule, 0)
		if err != nil {
			return err
		}
		at := epoch.Add(1300 * time.Millisecond)
		for i := 0; i < 5; i++ {
			ratelimit.TakeAt(z, "k", at.Add(time.Duration(i)*700*time.Millisecond))
		}
		now := at.Add(4 * time.Second)
		d := ratelimit.TakeAt(z, "k", now)
		if d.Allowed || d.RetryAfter <= 0 {
			z.Close()
			return fmt.Errorf("%v: 6th request got %+v, want denied", alg, d)
		}
		if early := ratelimit.TakeAt(z, "k", now.Add(d.RetryAfter-time.Nanosecond)); early.Allowed {
			z.Close()
			return fmt.Errorf("%v: allowed 1ns before RetryAfter %v", alg, d.RetryAfter)
		}
		if on := ratelimit.TakeAt(z, "k", now.Add(d.RetryAfter)); !on.Allowed {
			z.Close()
			return fmt.Errorf("%v: denied at RetryAfter %v: %+v", alg, d.RetryAfter, on)
		}
		z.Close()
	}
	return nil
}

// algorithms: fixed resets at the boundary; strict and log never admit
// more than N in a window; sliding weighs the leaving sub-window.
func algorithms() error {
	type step struct {
		at      time.Duration
		allowed bool
	}
	cases := []struct {
		alg   ratelimit.Algorithm
		steps []step
	}{
		// Limit 2 per 10s, sub-window 1s. Two requests late in [0,10s),
		// then requests just after 10s.
		{ratelimit.Fixed, []step{{9 * time.Second, true}, {9500 * time.Millisecond, true}, {9900 * time.Millisecond, false}, {10 * time.Second, true}, {10100 * time.Millisecond, true}}},
		{ratelimit.Strict, []step{{9 * time.Second, true}, {9500 * time.Millisecond, true}, {10 * time.Second, false}, {19 * time.Second, false}, {20 * time.Second, true}}},
		{ratelimit.Log, []step{{9 * time.Second, true}, {9500 * time.Millisecond, true}, {18999 * time.Millisecond, false}, {19 * time.Second, true}, {19400 * time.Millisecond, false}}},
		// Sliding at 19.5s: sub-window 9 leaves the window half way, so it
		// counts 1 of its 2 requests.
		{ratelimit.Sliding, []step{{9 * time.Second, true}, {9500 * time.Millisecond, true}, {19 * time.Second, false}, {19500 * time.Millisecond, true}, {19600 * time.Millisecond, false}}},
	}
	for _, tc := range cases {
		z, err := newZone(ratelimit.Rule{Window: 10 * time.Second, SubWindow: subWindowFor(tc.alg), Limit: 2, Algorithm: tc.alg}, 0)
		if err != nil {
			return err
		}
		for i, s := range tc.steps {
			if d := ratelimit.TakeAt(z, "k", epoch.Add(s.at)); d.Allowed != s.allowed {
				z.Close()
				return fmt.Errorf("%v step %d at %v: allowed=%v, want %v (%+v)", tc.alg, i, s.at, d.Allowed, s.allowed, d)
			}
		}
		z.Close()
	}
	return nil
}

func subWindowFor(alg ratelimit.Algorithm) time.Duration {
	if alg == ratelimit.Fixed || alg == ratelimit.Log {
		return 0
	}
	return time.Second
}

// multiRule: SMS codes, 1 per minute, 5 per hour, 10 per day on one key,
// consumed only if all three allow.
func multiRule() error {
	rules := []ratelimit.Rule{
		{Window: time.Minute, SubWindow: time.Second, Limit: 1, Algorithm: ratelimit.Strict},
		{Window: time.Hour, SubWindow: time.Minute, Limit: 5, Algorithm: ratelimit.Strict},
		{Window: 24 * time.Hour, SubWindow: time.Hour, Limit: 10, Algorithm: ratelimit.Strict},
	}
	items := make([]ratelimit.Item, len(rules))
	for i := range rules {
		z, err := newZone(rules[i], 0)
		if err != nil {
			return err
		}
		defer z.Close()
		items[i] = ratelimit.Item{Zone: z, Key: "+15550100"}
	}
	out := make([]ratelimit.Decision, len(items))
	// One attempt every 30s for 10 hours: the minute rule admits every
	// other one, the hour rule 5 per hour, the day rule 10 in total.
	admitted := 0
	for i := 0; i < 1200; i++ {
		now := epoch.Add(time.Duration(i) * 30 * time.Second)
		if ratelimit.TakeAll(now, items, out) {
			admitted++
			if i > 0 && admitted == 1 {
				return errors.New("first attempt was not admitted")
			}
			continue
		}
		if ratelimit.Tightest(out) < 0 {
			return errors.New("no decision speaks for a denial")
		}
	}
	if admitted != 10 {
		return fmt.Errorf("admitted %d codes over 10 hours, want 10 (the day rule)", admitted)
	}
	// Once the day's codes have left every window, codes pass again.
	if !ratelimit.TakeAll(epoch.Add(48*time.Hour), items, out) {
		return fmt.Errorf("denied the next day: %+v", out)
	}
	return nil
}

// concurrency: goroutines hammering one key admit exactly N in a window.
func concurrency() error {
	z, err := newZone(ratelimit.Rule{Window: time.Minute, Limit: 500, Algorithm: ratelimit.Strict}, 0)
	if err != nil {
		return err
	}
	defer z.Close()
	var admitted int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go hammer(z, &admitted, &wg)
	}
	wg.Wait()
	if admitted != 500 {
		return fmt.Errorf("admitted %d of 1600 concurrent requests, want exactly 500", admitted)
	}
	return nil
}

func hammer(z *ratelimit.Zone, admitted *int64, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := 0; i < 200; i++ {
		if ratelimit.TakeAt(z, "hot", epoch).Allowed {
			atomic.AddInt64(admitted, 1)
		}
	}
}

// maxKeys: a flood of distinct keys never tracks more than MaxKeys.
func maxKeys() error {
	z, err := newZone(ratelimit.Rule{Window: time.Minute, Limit: 10}, 1000)
	if err != nil {
		return err
	}
	defer z.Close()
	for i := 0; i < 5000; i++ {
		ratelimit.TakeAt(z, fmt.Sprintf("flood-%d", i), epoch)
	}
	if n := z.Len(); n > 1000 || n < 900 {
		return fmt.Errorf("tracking %d keys after a flood of 5000, want at most 1000 (and close to it)", n)
	}
	return nil
}

// takeAtCommonCase: TakeAt's inline common case decides as take does. A
// random trace of requests on a few keys, with the clock jumping ahead and
// stepping back, goes to two zones of the same rule: through TakeAt, and
// through TakeLimitAt at the rule's own limit, which never takes the
// inline case. Every decision must be the same, for every algorithm and
// cost.
func takeAtCommonCase() error {
	algs := []ratelimit.Algorithm{ratelimit.Sliding, ratelimit.Strict, ratelimit.Fixed, ratelimit.Log}
	for _, alg := range algs {
		for cost := int64(1); cost <= 2; cost++ {
			rule := ratelimit.Rule{Window: 10 * time.Second, SubWindow: subWindowFor(alg), Limit: 7, Cost: cost, Algorithm: alg}
			inline, err := newZone(rule, 0)
			if err != nil {
				return err
			}
			general, err := newZone(rule, 0)
			if err != nil {
				inline.Close()
				return err
			}
			err = sameDecisions(inline, general, rule.Limit, uint64(alg)*2+uint64(cost))
			inline.Close()
			general.Close()
			if err != nil {
				return fmt.Errorf("%v, cost %d: %w", alg, cost, err)
			}
		}
	}
	return nil
}

// sameDecisions sends one random trace, from seed, to a through TakeAt and
// to b through TakeLimitAt with limit, and compares the decisions.
func sameDecisions(a, b *ratelimit.Zone, limit int64, seed uint64) error {
	keys := []string{"a", "b", "c", "d", "e"}
	t := epoch.UnixNano()
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := 0; i < 3000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		switch r := x % 100; {
		case r < 2:
			t -= int64(x>>8) % int64(15*time.Second) // the clock steps back
		case r < 4:
			t += int64(x>>8) % int64(25*time.Second) // and ahead, past the window
		default:
			t += int64(x>>8) % int64(300*time.Millisecond)
		}
		key := keys[(x>>32)%uint64(len(keys))]
		da := ratelimit.TakeAt(a, key, time.Unix(0, t))
		db := ratelimit.TakeLimitAt(b, key, time.Unix(0, t), limit)
		if da != db {
			return fmt.Errorf("request %d, key %s at %d: TakeAt %+v, take %+v", i, key, t, da, db)
		}
	}
	return nil
}

// TakeLoop times n decisions on one existing key, admitted in its current
// sub-window, through ratelimit.TakeAt (the plugin's call).
func TakeLoop(n int) (time.Duration, error) {
	z, err := newZone(ratelimit.Rule{Window: time.Minute, Limit: ratelimit.MaxLimit}, 0)
	if err != nil {
		return 0, err
	}
	defer z.Close()
	ratelimit.TakeAt(z, "203.0.113.7", epoch)
	start := time.Now()
	for i := 0; i < n; i++ {
		ratelimit.TakeAt(z, "203.0.113.7", epoch)
	}
	return time.Since(start), nil
}

// DeniedLoop times n decisions on one key over its limit: a denied flood.
func DeniedLoop(n int) (time.Duration, error) {
	z, err := newZone(ratelimit.Rule{Window: time.Minute, Limit: 10}, 0)
	if err != nil {
		return 0, err
	}
	defer z.Close()
	for i := 0; i < 11; i++ {
		ratelimit.TakeAt(z, "203.0.113.7", epoch)
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		if ratelimit.TakeAt(z, "203.0.113.7", epoch).Allowed {
			return 0, fmt.Errorf("request %d over the limit was allowed", i)
		}
	}
	return time.Since(start), nil
}

// NaiveLoop times n decisions of the straightforward sliding window that
// plugins commonly write (a map of per-key bucket slices behind one mutex,
// summed on every request), as the yardstick for TakeLoop in the same run.
func NaiveLoop(n int) time.Duration {
	l := &naive{keys: map[string]*naiveKey{}, span: int64(6 * time.Second), buckets: 10, limit: 1 << 30}
	t := epoch.UnixNano()
	l.allow("203.0.113.7", t)
	start := time.Now()
	for i := 0; i < n; i++ {
		l.allow("203.0.113.7", t)
	}
	return time.Since(start)
}

type naiveKey struct {
	counts []int64
	last   int64
}

type naive struct {
	mu      sync.Mutex
	keys    map[string]*naiveKey
	span    int64
	buckets int64
	limit   int64
}

func (l *naive) allow(key string, t int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.keys[key]
	if !ok {
		k = &naiveKey{counts: make([]int64, l.buckets+1)}
		l.keys[key] = k
	}
	c := t / l.span
	for b := k.last + 1; b <= c && b <= k.last+l.buckets+1; b++ {
		k.counts[b%(l.buckets+1)] = 0
	}
	if c > k.last {
		k.last = c
	}
	var sum int64
	for b := c - l.buckets + 1; b <= c; b++ {
		sum += k.counts[b%(l.buckets+1)]
	}
	w := float64((c+1)*l.span-t) / float64(l.span)
	count := float64(sum) + float64(k.counts[(c+1)%(l.buckets+1)])*w
	if count+1 > float64(l.limit) {
		return false
	}
	k.counts[c%(l.buckets+1)]++
	return true
}
