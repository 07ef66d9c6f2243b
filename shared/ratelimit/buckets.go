package ratelimit

import "time"

// slack absorbs float rounding in the weighted count, so that a request at
// exactly the computed RetryAfter is admitted. It is a billionth of a
// request.
const slack = 1e-9

// takeBuckets implements Sliding, Strict and Fixed on the slot's ring of
// k+1 counters: the k sub-windows c-k+1..c inside the window and the one,
// c-k, that is leaving it. ring[b%(k+1)] holds sub-window b, and the slot's
// last counter holds the sum of the k inside ones, so that a request on a
// known key costs O(1) whatever k is.
func (z *Zone) takeBuckets(s *shard, slot uint32, t int64, commit bool) Decision {
	m := z.k + 1
	base := int64(slot) * int64(z.stride)
	c := t / z.span
	if newest := s.newest[slot]; c < newest {
		// The clock went back: count as if still in the newest sub-window.
		c = newest
		t = c * z.span
	} else if c > newest {
		z.roll(s, base, newest, c)
		s.newest[slot] = c
	}
	sum := float64(s.counts[base+m])
	count := sum
	if z.reach > 1 {
		leaving := float64(s.counts[base+(c+1)%m]) // sub-window c-k
		if z.weighted {
			count += leaving * float64((c+1)*z.span-t) / float64(z.span)
		} else if z.reach > 1 {
			count += leaving
		}
	}
	d := Decision{Limit: z.rule.Limit}
	if count+z.cost <= z.limit+slack {
		d.Allowed = true
		d.Remaining = remaining(z.limit - count - z.cost)
		d.ResetAfter = time.Duration((c+z.reach)*z.span - t)
		if commit {
			cost := uint32(z.rule.Cost)
			s.counts[base+c%m] += cost
			s.counts[base+m] += cost
		}
		return d
	}
	d.Remaining = remaining(z.limit - count)
	d.RetryAfter = z.retryAfter(s.counts[base:base+m], s.counts[base+m], c, t)
	d.ResetAfter = z.resetAfter(s.counts[base:base+m], c, t)
	return d
}

// roll advances a ring whose newest sub-window is from to sub-window to.
func (z *Zone) roll(s *shard, base, from, to int64) {
	m := z.k + 1
	if to-from >= m {
		copy(s.counts[base:base+m+1], z.zeros)
		return
	}
	sum := s.counts[base+m]
	for b := from + 1; b <= to; b++ {
		sum -= s.counts[base+(b+1)%m] // b-k leaves the inside set
		s.counts[base+b%m] = 0        // b-k-1 is gone; its cell becomes b
	}
	s.counts[base+m] = sum
}

// retryAfter returns the earliest delay after t at which a request of the
// zone's cost would be admitted if nothing else arrived. ring is indexed by
// sub-window modulo k+1, inside is the sum of the k inside sub-windows and
// c the current one. It walks the sub-windows to come; it runs on denials
// only.
func (z *Zone) retryAfter(ring []uint32, inside uint32, c, t int64) time.Duration {
	m := z.k + 1
	need := z.limit - z.cost + slack // the count must fall to need
	sum := float64(inside)           // sub-windows c'-k+1..c
	for j := int64(0); j <= z.k; j++ {
		cj := c + j
		start := cj * z.span
		if j == 0 {
			start = t
		}
		leaving := 0.0 // sub-window cj-k
		if z.reach > 1 {
			leaving = float64(ring[(cj+1)%m])
		}
		switch {
		case !z.weighted:
			if sum+leaving <= need {
				return time.Duration(start - t)
			}
		case sum+leaving*float64((cj+1)*z.span-start)/float64(z.span) <= need:
			return time.Duration(start - t)
		case sum <= need && leaving > 0:
			// The weighted count falls linearly through this sub-window.
			at := float64((cj+1)*z.span) - (need-sum)*float64(z.span)/leaving
			ns := int64(at)
			if float64(ns) < at {
				ns++
			}
			if ns < start {
				ns = start
			}
			return time.Duration(ns - t)
		}
		if j < z.k {
			sum -= float64(ring[(cj+2)%m]) // cj-k+1 becomes the leaving one
		}
	}
	return time.Duration((c+z.reach)*z.span - t)
}

// resetAfter returns the delay until no counted request is left: the newest
// non-empty sub-window b stays counted until sub-window b+reach begins.
func (z *Zone) resetAfter(ring []uint32, c, t int64) time.Duration {
	m := z.k + 1
	for b := c; b > c-z.reach; b-- {
		if ring[b%m] != 0 {
			return time.Duration((b+z.reach)*z.span - t)
		}
	}
	return 0
}

// remaining converts the headroom left to whole requests.
func remaining(v float64) int64 {
	if v <= 0 {
		return 0
	}
	return int64(v + slack)
}
