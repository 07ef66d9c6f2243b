package ratelimit

import "sync"

// shard is one lock's worth of a zone's keys. State lives in flat slabs
// indexed by slot, not in per-key objects: a key costs one map entry, one
// head and k+1 uint32 counters, which keeps memory per key small and the
// hot path free of allocation.
//
// Keys are held as their 64-bit seeded hash, not as strings: less memory
// per entry, no key string kept alive, and maps the garbage collector need
// not scan. Two keys share counters only if their hashes collide, about one
// chance in 10^7 among a million keys, and the seed is random per zone, so
// clients cannot aim for it.
type shard struct {
	mu sync.Mutex
	// index maps a key's hash to its slot.
	index map[uint64]uint32
	// heads holds, per slot, what a decision in the key's current
	// sub-window needs (bucket algorithms only).
	heads []head
	// counts holds, per slot, the ring of k+1 sub-window counters (bucket
	// algorithms only); the current sub-window's cell is written when the
	// ring rolls or a decision needs it (see settle).
	counts []uint32
	// logs is, per slot, the admitted timestamps (Log only).
	logs []logRing
	// denied holds, for keys of cost-1 bucket zones last denied, until when
	// they stay denied: with no admission in between a count only falls, so
	// the answer is known until then and a denied flood costs a lookup
	// instead of a RetryAfter walk. It is the only thing a denial writes.
	// Entries go with their key.
	denied map[uint64]denyUntil
	// free lists the slots of deleted keys, reused before the slabs grow.
	free []uint32
	// purged is when a full shard last swept itself (see evict).
	purged int64
}

// denyUntil is a cached denied decision, as absolute times in nanoseconds,
// and the head it was decided on. It holds until until as long as the key
// was not admitted since, which would have changed the head's end or
// count. (Once the clock has passed until, the key may be admitted, and a
// clock that then goes back would find the cached denial again.) Before
// the denial, back to the start of the head's sub-window, it holds too:
// with no admission in between, the count then was no smaller.
type denyUntil struct {
	until   int64   // when a request of the zone's cost first fits again
	resetAt int64   // when the window holds no counted request
	end     int64   // the head's end then
	inside  float64 // the head's count then
}

// evictSample is how many keys a full shard looks at to choose a victim.
const evictSample = 8

// newSlot creates the slot of a new key at t, evicting another key first
// if the shard is full. The caller holds s.mu.
func newSlot(z *Zone, s *shard, key uint64, t int64) uint32 {
	if len(s.index) >= z.perShard {
		s.evict(z, t)
	}
	var i uint32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else if z.log {
		i = uint32(len(s.logs))
		s.logs = append(s.logs, logRing{})
	} else {
		i = uint32(len(s.heads))
		s.heads = append(s.heads, head{})
		s.counts = append(s.counts, z.zeros...)
	}
	if z.log {
		s.logs[i].reset(t)
	} else {
		base := int64(i) * z.m
		copy(s.counts[base:base+z.m], z.zeros)
		s.heads[i] = head{end: (t/z.span + 1) * z.span}
	}
	s.index[key] = i
	return i
}

// lastActive returns the time of the newest counted request of slot i at
// the latest: the end of its current sub-window, or its newest timestamp.
func (s *shard) lastActive(z *Zone, i uint32) int64 {
	if z.log {
		return s.logs[i].newest
	}
	return s.heads[i].end
}

// expired reports whether slot i counts nothing at t.
func (s *shard) expired(z *Zone, i uint32, t int64) bool {
	if z.log {
		return s.logs[i].newest+z.window <= t
	}
	return s.heads[i].end+z.resetTail <= t
}

// evict makes room for one key. Keys only expire as time moves on, so a
// full shard first sweeps itself, at most once per sub-window (a tenth of
// the window for Log): under a flood of live keys that is one scan per
// sub-window, not one per insert. If that frees nothing, it removes the
// least recently active of a few sampled keys: Redis's approximated LRU; an
// exact LRU would cost a list node per key and a write on every hit.
func (s *shard) evict(z *Zone, t int64) {
	if t >= s.purged+z.purgeGap && s.sweepLocked(z, t) > 0 {
		s.purged = t
		return
	}
	s.purged = t
	victim, oldest, seen := uint64(0), int64(0), 0
	for key, i := range s.index {
		if s.expired(z, i, t) {
			victim = key
			break
		}
		if n := s.lastActive(z, i); seen == 0 || n < oldest {
			victim, oldest = key, n
		}
		seen++
		if seen == evictSample {
			break
		}
	}
	s.remove(victim)
}

// remove deletes key and frees its slot.
func (s *shard) remove(key uint64) {
	i, ok := s.index[key]
	if !ok {
		return
	}
	delete(s.index, key)
	delete(s.denied, key)
	s.free = append(s.free, i)
	if s.logs != nil {
		s.logs[i].release()
	}
}

// sweep removes every key whose window holds no counted request at t.
func (s *shard) sweep(z *Zone, t int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweepLocked(z, t)
}

func (s *shard) sweepLocked(z *Zone, t int64) int {
	removed := 0
	for key, i := range s.index {
		if s.expired(z, i, t) {
			s.remove(key)
			removed++
		}
	}
	return removed
}
