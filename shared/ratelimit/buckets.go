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
// leaving*(end-t)/T, so that a request on a known key is a few float
// operations and one increment whatever k is; the ring is brought up to
// date only when the sub-window changes or a denial needs it. The weight
// is the product divided by T, not leaving times a precomputed 1/T: the
// product is exact and the division rounds once, so a count that is a
// whole number comes out whole, as a remote store's script computes it, and a request
// that fits exactly is admitted.

// head is a key's state for its current sub-window c.
type head struct {
	end     int64   // (c+1)*T in nanoseconds: when sub-window c ends
	inside  float64 // requests counted whole: sub-windows c-k+1..c, and c-k for Strict
	leaving float64 // Sliding: requests of sub-window c-k; otherwise 0
}

// take decides on the key name, hashed to key, at t (nanoseconds) in the locked
// shard s and, when the request is allowed and commit is set, counts it.
// TakeAt has a copy of its common case.
//
// As in a remote store's script, only an admission changes what a key counts: a
// denial is decided on a copy of the head, so that the newest sub-window
// a key knows is the newest it was admitted in, and a clock that went
// back counts there.
//
// limit is the key's N for this request: the rule's, or its override.
func take(z *Zone, s *shard, name string, key uint64, t int64, limit int64, commit bool) Decision {
	// Keep t where the sub-window arithmetic holds (see MaxWindow).
	if t < z.window {
		t = z.window
	} else if t > z.maxTime {
		t = z.maxTime
	}
	if z.log {
		return takeLog(z, s, name, key, t, int(limit), commit)
	}
	slot, known := s.index[key]
	if !known {
		slot = newSlot(z, s, name, key, t, limit)
	}
	h := &s.heads[slot]
	t = headTime(z, h, t)
	cur := *h
	var ring []uint32
	newest := int64(0)
	if t >= h.end {
		ring, newest = settle(z, s, slot)
		cur = headAt(z, ring, newest, t/z.span)
	}
	n := float64(limit)
	count := cur.inside + cur.leaving*float64(cur.end-t)/z.spanF
	if count+z.cost > n {
		if ring == nil {
			ring, newest = settle(z, s, slot)
		}
		d := deny(z, ring, newest, &cur, t, count, n)
		d.Limit = limit
		if z.cost32 == 1 {
			if s.denied == nil {
				s.denied = make(map[uint64]denyUntil)
			}
			s.denied[key] = denyUntil{until: t + int64(d.RetryAfter), resetAt: t + int64(d.ResetAfter), from: h.end - z.span, head: *h, limit: limit}
		}
		return d
	}
	if commit {
		if ring != nil {
			roll(z, ring, newest, t/z.span)
			*h = cur
		}
		h.inside += z.cost
	}
	return Decision{
		Allowed:    true,
		Limit:      limit,
		Remaining:  int64(n - count - z.cost),
		ResetAfter: time.Duration(cur.end + z.resetTail - t),
	}
}

// headTime returns the time a request at t counts at for the key of head
// h, and moves a head that counts nothing to t. Counting nothing (neither
// inside nor leaving: a new key, or one whose counts were all refunded),
// its ring is empty and the head may move to t either way; once it holds
// a count, a clock that went back counts in the newest sub-window
// written, as a remote store's script does.
func headTime(z *Zone, h *head, t int64) int64 {
	if h.inside == 0 && h.leaving == 0 {
		if t < h.end-z.span || t >= h.end {
			*h = head{end: (t/z.span + 1) * z.span}
		}
	} else if t < h.end-z.span {
		t = h.end - z.span
	}
	return t
}

// settle writes the current sub-window's count into the ring of slot and
// returns the ring and the current sub-window index: the ring then holds
// sub-windows c-k..c. It writes newestCount out: it is on the request
// path, where a call costs a frame (see the package documentation).
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

// newestCount returns what the newest sub-window of a key counts, as
// settle writes it into the ring: inside, less the other sub-windows
// inside counts. ring is the key's ring, or a copy of it.
func newestCount(z *Zone, ring []uint32, h *head) uint32 {
	c := h.end/z.span - 1
	rest := 0.0
	for b := c - z.k + 1; b < c; b++ {
		rest += float64(ring[b%z.m])
	}
	if z.leavingWeight == 1 {
		rest += float64(ring[(c+1)%z.m])
	}
	return uint32(h.inside - rest)
}

// headAt returns the head of sub-window c >= newest for a ring settled in
// sub-window newest, as if no request came in between: the sub-windows
// after newest count nothing. take, roll and retryAfter all use it, so
// that their counts agree to the last bit.
func headAt(z *Zone, ring []uint32, newest, c int64) head {
	inside := 0.0
	for b := c - z.k + 1; b <= c && b <= newest; b++ {
		inside += float64(ring[b%z.m])
	}
	leaving := 0.0 // sub-window c-k
	if c-z.k <= newest {
		leaving = float64(ring[(c+1)%z.m])
	}
	h := head{end: (c + 1) * z.span, inside: inside + leaving*z.leavingWeight}
	if z.weighted {
		h.leaving = leaving
	}
	return h
}

// roll clears, in a ring settled in sub-window from, the cells of the
// sub-windows that left it by sub-window to: their cells become to's.
func roll(z *Zone, ring []uint32, from, to int64) {
	if to-from >= z.m {
		copy(ring, z.zeros)
		return
	}
	for b := from + 1; b <= to; b++ {
		ring[b%z.m] = 0 // b-k-1 is gone; its cell becomes b
	}
}

// deny builds the decision for a request at t that does not fit: cur is
// the key's head at t and count its count, ring the key's ring settled in
// sub-window newest, and n the key's limit.
func deny(z *Zone, ring []uint32, newest int64, cur *head, t int64, count, n float64) Decision {
	d := Decision{RetryAfter: retryAfter(z, cur, ring, newest, t, n)}
	if count < n {
		d.Remaining = int64(n - count)
	}
	// The newest non-empty sub-window b stays counted until b+reach begins.
	c := cur.end/z.span - 1
	for b := newest; b > c-z.reach; b-- {
		if ring[b%z.m] != 0 {
			d.ResetAfter = time.Duration((b+z.reach)*z.span - t)
			break
		}
	}
	return d
}

// retryAfter returns the earliest delay after t at which a request of the
// zone's cost would be admitted if nothing else arrived, walking the
// sub-windows to come; cur is the key's head at t, ring its ring settled
// in sub-window newest. Each sub-window's count is computed with the very
// expressions take uses, so that the answer is exact to the nanosecond.
func retryAfter(z *Zone, cur *head, ring []uint32, newest, t int64, n float64) time.Duration {
	need := n - z.cost // the count must fall to need
	inside, leaving, end := cur.inside, cur.leaving, cur.end
	c := end/z.span - 1
	for j := int64(0); j <= z.k; j++ {
		start := end - z.span
		if j == 0 {
			start = t
		}
		if inside+leaving*float64(end-start)/z.spanF <= need {
			return time.Duration(start - t)
		}
		if leaving > 0 && inside <= need {
			// The weighted count falls linearly through this sub-window:
			// solve for the crossing, then settle the float rounding.
			at := end - int64((need-inside)*z.spanF/leaving)
			if at < start {
				at = start
			}
			for at > start && inside+leaving*float64(end-at+1)/z.spanF <= need {
				at--
			}
			for inside+leaving*float64(end-at)/z.spanF > need {
				at++
			}
			return time.Duration(at - t)
		}
		next := headAt(z, ring, newest, c+j+1)
		inside, leaving, end = next.inside, next.leaving, next.end
	}
	return time.Duration((newest+z.reach)*z.span - t)
}
