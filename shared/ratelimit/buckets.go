package ratelimit

import "time"

// The bucket algorithms (Sliding, Strict, Fixed) keep, per key, a ring of
// k+1 counters: the k sub-windows c-k+1..c inside the window and the one,
// c-k, that is leaving it; counts[base+b%(k+1)] holds sub-window b, and
// counts[base+k+1] holds the sum of the k inside ones, so that a request on
// a known key costs O(1) whatever k is. The count at time t in sub-window c
// is inside + leaving*w, where w is the part of the leaving sub-window
// still inside the window for Sliding, 1 for Strict and 0 for Fixed.

// take decides on the key hashed to key at t (nanoseconds) in the locked
// shard s and, when the request is allowed and commit is set, counts it.
// TakeAt has a copy of its common case.
func take(z *Zone, s *shard, key uint64, t int64, commit bool) Decision {
	if z.log {
		return takeLog(z, s, key, t, commit)
	}
	c := t / z.span
	slot, known := s.index[key]
	if !known {
		slot = newSlot(z, s, key, c)
	}
	if newest := s.newest[slot]; c < newest {
		// The clock went back: count as if still in the newest sub-window.
		c, t = newest, newest*z.span
	} else if c > newest {
		roll(z, s, slot, newest, c)
	}
	cells := s.counts[int64(slot)*z.stride:]
	count := float64(cells[z.m]) + float64(cells[(c+1)%z.m])*weight(z, c, t)
	if count+z.cost > z.limit {
		return deny(z, cells, c, t, count)
	}
	if commit {
		cells[c%z.m] += z.cost32
		cells[z.m] += z.cost32
	}
	return Decision{
		Allowed:    true,
		Limit:      z.rule.Limit,
		Remaining:  int64(z.limit - count - z.cost),
		ResetAfter: time.Duration((c+z.reach)*z.span - t),
	}
}

// roll advances the ring of slot from sub-window from to sub-window to.
func roll(z *Zone, s *shard, slot uint32, from, to int64) {
	s.newest[slot] = to
	base := int64(slot) * z.stride
	m := z.m
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

// deny builds the decision for a request that does not fit. cells is the
// slot's ring followed by the inside sum; count is the count at t.
func deny(z *Zone, cells []uint32, c, t int64, count float64) Decision {
	d := Decision{Limit: z.rule.Limit, RetryAfter: retryAfter(z, cells, c, t)}
	if count < z.limit {
		d.Remaining = int64(z.limit - count)
	}
	// The newest non-empty sub-window b stays counted until b+reach begins.
	for b := c; b > c-z.reach; b-- {
		if cells[b%z.m] != 0 {
			d.ResetAfter = time.Duration((b+z.reach)*z.span - t)
			break
		}
	}
	return d
}

// weight returns the part of the leaving sub-window counted at t in
// sub-window c. It must compute exactly what take computes inline.
func weight(z *Zone, c, t int64) float64 {
	if z.weighted {
		return float64((c+1)*z.span-t) * z.invSpan
	}
	return z.leavingWeight
}

// retryAfter returns the earliest delay after t at which a request of the
// zone's cost would be admitted if nothing else arrived, walking the
// sub-windows to come. It runs on denials only.
func retryAfter(z *Zone, cells []uint32, c, t int64) time.Duration {
	m := z.m
	need := z.limit - z.cost // the count must fall to need
	sum := float64(cells[m]) // sub-windows cj-k+1..c
	for j := int64(0); j <= z.k; j++ {
		cj := c + j
		start := cj * z.span
		if j == 0 {
			start = t
		}
		leaving := float64(cells[(cj+1)%m]) // sub-window cj-k
		if sum+leaving*weight(z, cj, start) <= need {
			return time.Duration(start - t)
		}
		if z.weighted && sum <= need {
			// The weighted count falls linearly through this sub-window:
			// solve for the crossing, then settle the float rounding
			// against the very expression take uses.
			at := int64(float64((cj+1)*z.span) - (need-sum)*float64(z.span)/leaving)
			if at < start {
				at = start
			}
			for at > start && sum+leaving*weight(z, cj, at-1) <= need {
				at--
			}
			for sum+leaving*weight(z, cj, at) > need {
				at++
			}
			return time.Duration(at - t)
		}
		if j < z.k {
			sum -= float64(cells[(cj+2)%m]) // cj-k+1 becomes the leaving one
		}
	}
	return time.Duration((c+z.reach)*z.span - t)
}
