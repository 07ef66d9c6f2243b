package ratelimit

import "sync"

// shard is one lock's worth of a zone's keys. Counters live in flat slabs
// indexed by slot, not in per-key objects: a key costs one map entry plus
// (k+2) uint32 and one int64, which keeps memory per key small and the hot
// path free of pointer chasing and allocation.
//
// Keys are held as their 64-bit seeded hash, not as strings: 16 bytes less
// per entry, no key string kept alive, and maps the garbage collector need
// not scan. Two keys share counters only if their hashes collide, about one
// chance in 10^7 among a million keys, and the seed is random per zone, so
// clients cannot aim for it.
type shard struct {
	mu sync.Mutex
	// index maps a key's hash to its slot.
	index map[uint64]uint32
	// counts holds, per slot, the ring of k+1 sub-window counters followed
	// by the sum of the k newest of them (bucket algorithms only).
	counts []uint32
	// newest is, per slot, the index of the newest sub-window the ring has
	// rolled to (bucket algorithms) or the newest timestamp (Log).
	newest []int64
	// logs is, per slot, the admitted timestamps (Log only).
	logs []logRing
	// free lists the slots of deleted keys, reused before the slabs grow.
	free []uint32
	// purged is when a full shard last swept itself (see evict).
	purged int64
}

// evictSample is how many keys a full shard looks at to choose a victim.
const evictSample = 8

// newSlot creates the slot of a new key, evicting another key first if the
// shard is full. c is the current sub-window index, or the current time for
// Log. The caller holds s.mu.
func newSlot(z *Zone, s *shard, key uint64, c int64) uint32 {
	if len(s.index) >= z.perShard {
		s.evict(z, c)
	}
	var i uint32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
		s.reset(z, i)
	} else {
		i = uint32(len(s.newest))
		s.newest = append(s.newest, 0)
		if z.log {
			s.logs = append(s.logs, logRing{})
		} else {
			s.counts = append(s.counts, z.zeros...)
		}
	}
	s.newest[i] = c
	s.index[key] = i
	return i
}

// reset clears a reused slot.
func (s *shard) reset(z *Zone, i uint32) {
	if z.log {
		s.logs[i].reset()
		return
	}
	base := int64(i) * z.stride
	copy(s.counts[base:base+z.stride], z.zeros)
}

// evict makes room for one key. Keys only expire as time moves on, so a
// full shard first sweeps itself, at most once per sub-window (a tenth of
// the window for Log): under a flood of live keys that is one scan per
// sub-window, not one per insert. If that frees nothing, it removes the
// least recently active of a few sampled keys: Redis's approximated LRU; an
// exact LRU would cost a list node per key and a write on every hit.
func (s *shard) evict(z *Zone, c int64) {
	if c >= s.purged+z.purgeGap && s.sweepLocked(z, c) > 0 {
		s.purged = c
		return
	}
	s.purged = c
	victim, oldest, seen := uint64(0), int64(0), 0
	for key, i := range s.index {
		n := s.newest[i]
		if z.expired(n, c) {
			victim = key
			break
		}
		if seen == 0 || n < oldest {
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
	s.free = append(s.free, i)
	if s.logs != nil {
		s.logs[i].release()
	}
}

// sweep removes every key whose window holds no counted request.
func (s *shard) sweep(z *Zone, c int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweepLocked(z, c)
}

func (s *shard) sweepLocked(z *Zone, c int64) int {
	removed := 0
	for key, i := range s.index {
		if z.expired(s.newest[i], c) {
			s.remove(key)
			removed++
		}
	}
	return removed
}
