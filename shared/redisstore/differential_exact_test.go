package redisstore

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// The exact decision, in rational arithmetic, straight from DESIGN.md's
// definitions: when the two stores disagree, it tells which one is wrong.
// Times are microseconds; admitted holds the time of every admitted
// request of one key, oldest first, time never going back.

type exactDecision struct {
	allowed   bool
	remaining int64
	retry     *big.Rat // µs after t, for a denial
	reset     int64    // µs after t
}

func (e exactDecision) String() string {
	retry := "0"
	if e.retry != nil {
		retry = e.retry.RatString()
	}
	return fmt.Sprintf("{Allowed:%v Remaining:%d RetryAfter:%sµs ResetAfter:%dµs}", e.allowed, e.remaining, retry, e.reset)
}

// exactParts returns, in units of cost, the requests of sub-windows
// c-k+1..c and of sub-window c-k.
func exactParts(r ratelimit.Rule, admitted []int64, c int64) (inside, leaving int64) {
	span, k := int64(r.SubWindow/time.Microsecond), int64(r.Window/r.SubWindow)
	for _, a := range admitted {
		switch b := a / span; {
		case b > c-k && b <= c:
			inside += r.Cost
		case b == c-k:
			leaving += r.Cost
		}
	}
	return inside, leaving
}

// exactCount returns the count at t.
func exactCount(r ratelimit.Rule, admitted []int64, t int64) *big.Rat {
	window, span := int64(r.Window/time.Microsecond), int64(r.SubWindow/time.Microsecond)
	if r.Algorithm == ratelimit.Log {
		n := int64(0)
		for _, a := range admitted {
			if a > t-window && a <= t {
				n += r.Cost
			}
		}
		return big.NewRat(n, 1)
	}
	c := t / span
	inside, leaving := exactParts(r, admitted, c)
	count := big.NewRat(inside, 1)
	switch r.Algorithm {
	case ratelimit.Sliding:
		count.Add(count, big.NewRat(leaving*((c+1)*span-t), span))
	case ratelimit.Strict:
		count.Add(count, big.NewRat(leaving, 1))
	}
	return count
}

func exactTake(r ratelimit.Rule, admitted []int64, t int64) exactDecision {
	window, span := int64(r.Window/time.Microsecond), int64(r.SubWindow/time.Microsecond)
	limit := big.NewRat(r.Limit, 1)
	need := big.NewRat(r.Limit-r.Cost, 1)
	count := exactCount(r, admitted, t)
	floorOf := func(x *big.Rat) int64 { // x >= 0
		q := new(big.Int).Quo(x.Num(), x.Denom())
		return q.Int64()
	}
	reach := window/span + 1
	if r.Algorithm == ratelimit.Fixed {
		reach = 1
	}
	var e exactDecision
	if count.Cmp(need) <= 0 {
		e.allowed = true
		e.remaining = floorOf(new(big.Rat).Sub(need, count))
		if r.Algorithm == ratelimit.Log {
			e.reset = window
		} else {
			e.reset = (t/span+reach)*span - t
		}
		return e
	}
	if count.Cmp(limit) < 0 {
		e.remaining = floorOf(new(big.Rat).Sub(limit, count))
	}
	if r.Algorithm == ratelimit.Log {
		var newest int64
		cands := []int64{t}
		for _, a := range admitted {
			if a > t-window && a <= t {
				newest = a
				cands = append(cands, a+window)
			}
		}
		e.reset = newest + window - t
		sort.Slice(cands, func(i, j int) bool { return cands[i] < cands[j] })
		for _, x := range cands {
			if exactCount(r, admitted, x).Cmp(need) <= 0 {
				e.retry = big.NewRat(x-t, 1)
				break
			}
		}
		return e
	}
	c := t / span
	for b := c; b > c-reach; b-- {
		if hasBucket(admitted, span, b) {
			e.reset = (b+reach)*span - t
			break
		}
	}
	for j := int64(0); j <= reach; j++ {
		cj := c + j
		start := cj * span
		if j == 0 {
			start = t
		}
		if exactCount(r, admitted, start).Cmp(need) <= 0 {
			e.retry = big.NewRat(start-t, 1)
			return e
		}
		inside, leaving := exactParts(r, admitted, cj)
		if r.Algorithm == ratelimit.Sliding && leaving > 0 && inside <= r.Limit-r.Cost {
			// inside + leaving*((cj+1)*T - x)/T = need
			x := big.NewRat((cj+1)*span-t, 1)
			x.Sub(x, new(big.Rat).Mul(big.NewRat(r.Limit-r.Cost-inside, 1), big.NewRat(span, leaving)))
			e.retry = x
			return e
		}
	}
	e.retry = big.NewRat((c+reach)*span-t, 1)
	return e
}

// forget drops the admissions that count for nothing at t or later.
func forget(r ratelimit.Rule, admitted []int64, t int64) []int64 {
	horizon := t - int64((r.Window+r.SubWindow)/time.Microsecond)
	i := 0
	for i < len(admitted) && admitted[i] < horizon {
		i++
	}
	return admitted[i:]
}

func hasBucket(admitted []int64, span, b int64) bool {
	for _, a := range admitted {
		if a/span == b {
			return true
		}
	}
	return false
}

// ceilRat returns x*scale rounded up.
func ceilRat(x *big.Rat, scale int64) int64 {
	y := new(big.Rat).Mul(x, big.NewRat(scale, 1))
	q, m := new(big.Int).QuoRem(y.Num(), y.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// exactWrong lists the fields of d that differ from e; unit is the
// resolution of d's RetryAfter (the zone's is a nanosecond, the script's
// a microsecond), which rounds the exact RetryAfter up.
func exactWrong(e exactDecision, d ratelimit.Decision, unit time.Duration) string {
	var bad []string
	if d.Allowed != e.allowed {
		bad = append(bad, "Allowed")
	}
	if d.Remaining != e.remaining {
		bad = append(bad, "Remaining")
	}
	if !e.allowed && d.Allowed == e.allowed {
		per := int64(time.Microsecond / unit)
		if want := time.Duration(ceilRat(e.retry, per)) * unit; d.RetryAfter != want {
			bad = append(bad, fmt.Sprintf("RetryAfter (exact, rounded up to %v: %v)", unit, want))
		}
	}
	if d.ResetAfter != time.Duration(e.reset)*time.Microsecond {
		bad = append(bad, "ResetAfter")
	}
	return strings.Join(bad, ", ")
}
