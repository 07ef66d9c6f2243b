package ratelimit

import "sync"

// shard is one lock's worth of a zone's keys. Counters live in flat slabs
// indexed by slot, not in per-key objects: a key costs one map entry plus
// (k+2) uint32 and one int64, which keeps memory per key small and the hot
// path free of pointer chasing and allocation.
type shard struct {
	mu sync.Mutex
	// index maps a key to its slot.
	index map[string]uint32
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
}

// evictSample is how many keys a full shard looks at to choose a victim.
const evictSample = 8

// slot returns the slot of key, creating it (and evicting if the shard is
// full) when the key is new. c is the current sub-window index, or the
// current time for Log. The caller holds s.mu.
func (s *shard) slot(z *Zone, key string, c int64) uint32 {
	if i, ok := s.index[key]; ok {
		return i
	}
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
		if z.rule.Algorithm == Log {
			s.logs = append(s.logs, logRing{})
		} else {
			s.counts = append(s.counts, make([]uint32, z.stride)...)
		}
	}
	s.newest[i] = c
	s.index[key] = i
	return i
}

// reset clears a reused slot.
func (s *shard) reset(z *Zone, i uint32) {
	if z.rule.Algorithm == Log {
		s.logs[i].reset()
		return
	}
	base := int(i) * z.stride
	copy(s.counts[base:base+z.stride], z.zeros)
}

// evict removes one key to make room: an expired key if the sample holds
// one, otherwise the least recently active key of the sample. This is
// Redis's approximated LRU; an exact LRU would cost a list node per key and
// a write on every hit.
func (s *shard) evict(z *Zone, c int64) {
	victim, oldest, seen := "", int64(0), 0
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
func (s *shard) remove(key string) {
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
	removed := 0
	for key, i := range s.index {
		if z.expired(s.newest[i], c) {
			s.remove(key)
			removed++
		}
	}
	return removed
}
