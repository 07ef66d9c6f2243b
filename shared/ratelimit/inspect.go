package ratelimit

import (
	"math"
	"time"
)

// KeyState is what a zone holds for one key at some moment, read without
// counting anything: what an operator asks before unblocking a client.
type KeyState struct {
	// Tracked reports whether the store holds state for the key.
	Tracked bool
	// Count is what the window counts for the key: for Sliding the
	// leaving sub-window weighted by the part of it still inside, rounded
	// up, as a remote store's script rounds it.
	Count int64
	// Remaining is how many requests of cost 1 would pass now: Limit
	// minus Count, at least 0.
	Remaining int64
	// ResetAfter is the delay until the window holds no counted request.
	ResetAfter time.Duration
	// BannedFor, in a zone with a ban, is how long the key stays banned
	// (see Options.Ban): 0 when it is not.
	BannedFor time.Duration
}

// ZoneNumber returns the number of the Zone value z, unique among the
// zones of this process: a zone rebuilt by a changed config gets a new
// one, so stores keep what they prepared for a zone by it, and TakeAll
// locks zones in its order. ZoneID is another thing: the description
// that makes two zones the same state across reloads.
//
// A function, not a method: interpreted, the method costs 14 allocations a
// Redis request more (see the package documentation).
func ZoneNumber(z *Zone) uint64 { return z.number }

// Inspect returns the state of key at now without changing the zone: no
// count, no new key, no cached denial. An untracked key reports the count
// it would start with, which a full zone may take from the summary of
// evicted keys.
func (z *Zone) Inspect(key string, now time.Time) KeyState {
	t := now.UnixNano()
	if t < z.window {
		t = z.window
	} else if t > z.maxTime {
		t = z.maxTime
	}
	k := z.hash(key)
	s := &z.shards[k&z.mask]
	s.Lock()
	defer s.Unlock()
	st := inspectKey(z, s, key, k, t)
	if left := s.banLeft(z, key, k, now.UnixNano()); left > 0 {
		st.BannedFor, st.Remaining = left, 0
	}
	return st
}

// inspectKey is Inspect's reading of the window of key, hashed to k, at t
// in its locked shard s.
func inspectKey(z *Zone, s *shard, key string, k uint64, t int64) KeyState {
	slot, known := s.index[k]
	if !known {
		st := KeyState{Remaining: z.rule.Limit}
		sk := k
		if z.persist != nil {
			sk = z.persist.id(key)
		}
		if t < s.evicted.live {
			if e, until := s.evicted.estimate(sk, t); e > 0 {
				st.Count, st.ResetAfter = int64(e), time.Duration(until-t)
				st.Remaining = remainingOf(z.rule.Limit, st.Count)
			}
		}
		if z.persist != nil && t < z.persist.restoredLive() {
			if e, until := z.persist.inspect(z, sk, t); e > st.Count {
				st.Count, st.ResetAfter = e, time.Duration(until-t)
				st.Remaining = remainingOf(z.rule.Limit, st.Count)
			}
		}
		return st
	}
	if z.log {
		return inspectLog(z, &s.logs[slot], t)
	}
	return inspectBuckets(z, s, slot, t)
}

// inspectBuckets is Inspect for the bucket algorithms: take's reading of
// the key, on a copy of its ring.
func inspectBuckets(z *Zone, s *shard, slot uint32, t int64) KeyState {
	h := s.heads[slot]
	if h.inside == 0 && h.leaving == 0 {
		return KeyState{Tracked: true, Remaining: z.rule.Limit}
	}
	if t < h.end-z.span {
		t = h.end - z.span // the clock went back, as take counts it
	}
	// settle's write, on a copy.
	base := int64(slot) * z.m
	ring := make([]uint32, z.m)
	copy(ring, s.counts[base:base+z.m])
	newest := h.end/z.span - 1
	ring[newest%z.m] = newestCount(z, ring, &h)
	cur := h
	if t >= h.end {
		cur = headAt(z, ring, newest, t/z.span)
	}
	count := cur.inside + cur.leaving*float64(cur.end-t)/z.spanF
	d := deny(z, ring, newest, &cur, t, count, z.limit)
	return KeyState{
		Tracked:    true,
		Count:      int64(math.Ceil(count)),
		Remaining:  d.Remaining,
		ResetAfter: d.ResetAfter,
	}
}

// inspectLog is Inspect for Log: takeLog's reading of the key.
func inspectLog(z *Zone, r *logRing, t int64) KeyState {
	t, old := logAt(z, r, t)
	n := int64(r.n - old)
	st := KeyState{Tracked: true, Count: n, Remaining: remainingOf(z.rule.Limit, n)}
	if n > 0 {
		st.ResetAfter = time.Duration(r.at(r.n-1) + z.window - t)
	}
	return st
}

// remainingOf returns limit-count, at least 0.
func remainingOf(limit, count int64) int64 {
	if count >= limit {
		return 0
	}
	return limit - count
}

// Forget removes key from the zone, its cached denial and its ban with
// it, so that its next request starts afresh, and reports whether the
// zone tracked it. In
// a full zone the key may still start with a count taken from the summary
// of evicted keys, which other keys share and which is never lowered.
func (z *Zone) Forget(key string) bool {
	k := z.hash(key)
	s := &z.shards[k&z.mask]
	s.Lock()
	defer s.Unlock()
	_, known := s.index[k]
	s.remove(k)
	if _, ok := s.banned[k]; ok {
		delete(s.banned, k) // a reset lifts the ban
		delete(s.banIDs, k)
		known = true
	}
	if z.persist != nil && z.persist.forgetBan(z.persist.id(key)) {
		known = true
	}
	if z.persist != nil && z.persist.forget(z.persist.id(key)) {
		known = true // restored, not seen since: a reset must not bring it back
	}
	return known
}
