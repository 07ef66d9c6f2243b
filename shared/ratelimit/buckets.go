package ratelimit

import "time"

// The bucket algorithms (Sliding, Strict, Fixed) keep, per key, a ring of
// k+1 counters, ring[b%(k+1)] for sub-window b: the k sub-windows c-k+1..c
// inside the window and the one, c-k, that is leaving it. The count at time
// t in sub-window c is the inside ones plus the leaving one weighted by w:
// the part of it still inside the window for Sliding, 1 for Strict, 0 for
// Fixed.
//
// A head caches that count for the current sub-window as inside +
// rate*(end-t), so that a request on a known key is one multiply-add and
// one increment whatever k is; the ring is brought up to date only when
// the sub-window changes or a denial needs it.

// head is a key's state for its current sub-window c.
type head struct {
	end    int64   // (c+1)*T in nanoseconds: when sub-window c ends
	inside float64 // requests counted whole: sub-windows c-k+1..c, and c-k for Strict
	rate   float64 // Sliding: requests of sub-window c-k over T; otherwise 0
}

// take decides on the key hashed to key at t (nanoseconds) in the locked
// shard s and, when the request is allowed and commit is set, counts it.
// TakeAt has a copy of its common case.
func take(z *Zone, s *shard, key uint64, t int64, commit bool) Decision {
	if z.log {
		return takeLog(z, s, key, t, commit)
	}
	slot, known := s.index[key]
	if !known {
		slot = newSlot(z, s, key, t)
	}
	h := &s.heads[slot]
	if t >= h.end {
		advance(z, s, slot, t)
	} else if t < h.end-z.span {
		// The clock went back: count as if still in the newest sub-window.
		t = h.end - z.span
	}
	count := h.inside + h.rate*float64(h.end-t)
	if count+z.cost > z.limit {
		d := deny(z, s, slot, t, count)
		if z.cost32 == 1 {
			if s.denied == nil {
				s.denied = make(map[uint64]denyUntil)
			}
			s.denied[key] = denyUntil{until: t + int64(d.RetryAfter), resetAt: t + int64(d.ResetAfter)}
		}
		return d
	}
	if commit {
		h.inside += z.cost
	}
	return Decision{
		Allowed:    true,
		Limit:      z.rule.Limit,
		Remaining:  int64(z.limit - count - z.cost),
		ResetAfter: time.Duration(h.end + z.resetTail - t),
	}
}

// heldDenial returns the cached denial of key at t, if it still holds.
// It is its own small function so that a denied flood under yaegi does not
// pay for take's frame.
func heldDenial(z *Zone, s *shard, key uint64, t int64) (Decision, bool) {
	den, ok := s.denied[key]
	if !ok || t >= den.until {
		return Decision{}, false
	}
	return Decision{Limit: z.rule.Limit, RetryAfter: time.Duration(den.until - t), ResetAfter: time.Duration(den.resetAt - t)}, true
}

// settle writes the current sub-window's count into the ring of slot and
// returns the ring and the current sub-window index.
func settle(z *Zone, s *shard, slot uint32) ([]uint32, int64) {
	base := int64(slot) * z.m
	ring := s.counts[base : base+z.m]
	h := &s.heads[slot]
	c := h.end/z.span - 1
	// inside counts sub-windows c-k+1..c whole, and c-k for Strict.
	rest := 0.0
	for b := c - z.k + 1; b < c; b++ {
		rest += float64(ring[b%z.m])
	}
	if z.leavingWeight == 1 {
		rest += float64(ring[(c+1)%z.m])
	}
	ring[c%z.m] = uint32(h.inside - rest)
	return ring, c
}

// advance moves slot to the sub-window of t: it settles the current
// sub-window in the ring, clears the sub-windows that left it, and
// recomputes the head.
func advance(z *Zone, s *shard, slot uint32, t int64) {
	ring, from := settle(z, s, slot)
	to := t / z.span
	if to-from >= z.m {
		copy(ring, z.zeros)
	} else {
		for b := from + 1; b <= to; b++ {
			ring[b%z.m] = 0 // b-k-1 is gone; its cell becomes b
		}
	}
	inside := 0.0
	for b := to - z.k + 1; b <= to; b++ {
		inside += float64(ring[b%z.m])
	}
	leaving := float64(ring[(to+1)%z.m]) // sub-window to-k
	h := &s.heads[slot]
	h.end = (to + 1) * z.span
	h.inside = inside + leaving*z.leavingWeight
	h.rate = 0
	if z.weighted {
		h.rate = leaving * z.invSpan
	}
}

// deny builds the decision for a request at t that does not fit; count is
// the count at t.
func deny(z *Zone, s *shard, slot uint32, t int64, count float64) Decision {
	ring, c := settle(z, s, slot)
	d := Decision{Limit: z.rule.Limit, RetryAfter: retryAfter(z, &s.heads[slot], ring, c, t)}
	if count < z.limit {
		d.Remaining = int64(z.limit - count)
	}
	// The newest non-empty sub-window b stays counted until b+reach begins.
	for b := c; b > c-z.reach; b-- {
		if ring[b%z.m] != 0 {
			d.ResetAfter = time.Duration((b+z.reach)*z.span - t)
			break
		}
	}
	return d
}

// retryAfter returns the earliest delay after t at which a request of the
// zone's cost would be admitted if nothing else arrived, walking the
// sub-windows to come; h and ring are the key's, synced, in sub-window c.
// Each sub-window's count is computed with the very expressions take and
// advance use, so that the answer is exact to the nanosecond.
func retryAfter(z *Zone, h *head, ring []uint32, c, t int64) time.Duration {
	need := z.limit - z.cost // the count must fall to need
	inside, rate, end := h.inside, h.rate, h.end
	for j := int64(0); j <= z.k; j++ {
		start := end - z.span
		if j == 0 {
			start = t
		}
		if inside+rate*float64(end-start) <= need {
			return time.Duration(start - t)
		}
		if rate > 0 && inside <= need {
			// The weighted count falls linearly through this sub-window:
			// solve for the crossing, then settle the float rounding.
			at := end - int64((need-inside)/rate)
			if at < start {
				at = start
			}
			for at > start && inside+rate*float64(end-at+1) <= need {
				at--
			}
			for inside+rate*float64(end-at) > need {
				at++
			}
			return time.Duration(at - t)
		}
		// Step to sub-window c+j+1, as advance would with no new requests.
		cj := c + j + 1
		inside = 0
		for b := cj - z.k + 1; b <= c; b++ {
			inside += float64(ring[b%z.m])
		}
		leaving := 0.0 // sub-window cj-k
		if cj-z.k <= c {
			leaving = float64(ring[(cj+1)%z.m])
		}
		inside += leaving * z.leavingWeight
		if z.weighted {
			rate = leaving * z.invSpan
		}
		end += z.span
	}
	return time.Duration((c+z.reach)*z.span - t)
}
