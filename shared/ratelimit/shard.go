package ratelimit

import (
	"math"
	"sync"
)

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
	// The mutex is embedded: TakeAt's s.Lock() is one selector less than
	// s.mu.Lock() (see the package documentation).
	sync.Mutex
	// index maps a key's hash to its slot.
	index map[uint64]uint32
	// heads holds, per slot, what a decision in the key's current
	// sub-window needs (bucket algorithms). Slot 0 is no key's, so that
	// TakeAt can look up an unknown key's head (the map's zero value)
	// without a branch of its own; its head, and every head of a Log
	// zone, counts +Inf, which no request fits, whatever the time.
	heads []head
	// counts holds, per slot, the ring of k+1 sub-window counters (bucket
	// algorithms only); the current sub-window's cell is written when the
	// ring rolls or a decision needs it (see settle).
	counts []uint32
	// logs is, per slot, the admitted timestamps (Log only).
	logs []logRing
	// generations holds, per slot, the generation of the key in it: a
	// number new for each key the shard creates, which a receipt carries,
	// so that a count reserved before a key was forgotten or evicted is
	// never given back from the count of the key that replaced it. 64 bits,
	// so that it never wraps: at 32, a shard's 2^32nd key took the
	// generation of its first, and a receipt of the first gave back the
	// other's count.
	generations []uint64
	// born is the last generation the shard gave.
	born uint64
	// denied holds, for keys of cost-1 bucket zones last denied, until when
	// they stay denied: with no admission in between a count only falls, so
	// the answer is known until then and a denied flood costs a lookup
	// instead of a RetryAfter walk. It is the only thing a denial writes.
	// Entries go with their key.
	denied map[uint64]denyUntil
	// banned holds, for the keys of a zone with a ban, when their ban
	// ends, in nanoseconds (see ban.go); nil in a zone without one. A ban
	// outlives its key's slot: eviction and sweeps of keys leave it.
	banned map[uint64]int64
	// banIDs holds the portable id of each ban's key in a zone with
	// Options.Persist (see banpersist.go).
	banIDs map[uint64]uint64
	// free lists the slots of deleted keys, reused before the slabs grow.
	free []uint32
	// room is how many keys the shard holds before a new one must make
	// room: the zone's perShard, or 0 while the zone sleeps (see
	// Zone.sleep), so that the first new key after that wakes it up from
	// a branch that newSlot takes anyway, at no cost to other requests.
	room int
	// purged is when a full shard last swept itself (see evict).
	purged int64
	// evicted summarizes the keys evicted while they still counted.
	evicted sketch
	// evictions and estimated are the shard's part of ZoneStats.
	evictions, estimated uint64
	// ids holds, per slot, the key's portable id (see persistState.id),
	// by which snapshots name it and the summary of evicted keys indexes
	// it; nil unless the zone has Options.Persist.
	ids []uint64
}

// denyUntil is a cached denied decision, as absolute times in nanoseconds,
// and the head it was decided on. It holds from the start of the head's
// sub-window (with no admission in between, the count then was no
// smaller) until until, as long as the key was not admitted since, which
// changes the head. (Once the clock has passed until, the key may be
// admitted, and a clock that then went back would find the denial.)
type denyUntil struct {
	until   int64 // when a request of the zone's cost first fits again
	resetAt int64 // when the window holds no counted request
	from    int64 // the start of the head's sub-window
	head    head  // the key's head then
	limit   int64 // the key's limit it was decided under
}

// evictSample is how many keys a full shard looks at to choose a victim.
const evictSample = 8

// newSlot creates the slot of the new key name, hashed to key, at t, whose
// limit is limit, evicting another key first if the shard is full, and
// seeds it from the sketch of evicted keys, or from a restored snapshot
// (see persistState.claim). The caller holds s locked.
func newSlot(z *Zone, s *shard, name string, key uint64, t int64, limit int64) uint32 {
	if len(s.index) >= s.room {
		s.makeRoom(z, t)
	}
	var i uint32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		i = s.grow(z)
	}
	if z.log {
		s.logs[i].reset(t)
	} else {
		base := int64(i) * z.m
		copy(s.counts[base:base+z.m], z.zeros)
		s.heads[i] = head{end: (t/z.span + 1) * z.span}
	}
	s.index[key] = i
	if s.born++; s.born == 0 {
		s.born = 1 // 0 is the generation of no key (slot 0)
	}
	s.generations[i] = s.born
	sk := key // the key's index in the sketch
	if z.persist != nil {
		sk = z.persist.id(name)
		s.ids[i] = sk
	}
	if t < s.evicted.live {
		if e, until := s.evicted.estimate(sk, t); e > 0 {
			s.seed(z, i, e, until, limit)
			s.estimated++
		}
	}
	if z.persist != nil && t < z.persist.restoredLive() {
		z.persist.claim(z, s, i, sk, t, limit)
	}
	return i
}

// init makes the shard's empty store, with the slot 0 that holds no key
// (see shard.heads).
func (s *shard) init(z *Zone) {
	s.index = make(map[uint64]uint32)
	s.room = z.perShard
	s.grow(z)
}

// makeRoom makes room for a new key at t: it evicts one from a full
// shard, and wakes a sleeping zone (a shard with no room; it holds no
// key then). The caller holds s locked.
func (s *shard) makeRoom(z *Zone, t int64) {
	if s.room == 0 {
		s.room = z.perShard
		z.wake()
		return
	}
	s.evict(z, t)
}

// grow adds a slot to the slabs and returns it. Its head is unusable
// (see shard.heads) until newSlot writes it.
func (s *shard) grow(z *Zone) uint32 {
	i := uint32(len(s.heads))
	s.heads = append(s.heads, head{inside: math.Inf(1)})
	s.generations = append(s.generations, 0)
	if z.persist != nil {
		s.ids = append(s.ids, 0)
	}
	if z.log {
		s.logs = append(s.logs, logRing{})
	} else {
		s.counts = append(s.counts, z.zeros...)
	}
	return i
}

// seed gives the new key in slot i the count e that stops counting at
// until, as if e requests had been admitted in the newest sub-window (the
// newest time, for Log) whose requests stop counting then: the seeded
// count never outlives the evicted count it stands for. A Log ring holds
// at most the key's own limit of entries: the rule's would hand a key
// whose override or tier is higher a fresh budget.
func (s *shard) seed(z *Zone, i uint32, e uint32, until int64, limit int64) {
	if z.log {
		r := &s.logs[i]
		n := int(e)
		if n > int(limit) {
			n = int(limit)
		}
		if len(r.ts) < n {
			r.ts = make([]int64, n) // one allocation, not one per doubling
		}
		for j := 0; j < n; j++ {
			r.push(until-z.window, int(limit))
		}
		r.newest = until - z.window
		return
	}
	b := until/z.span - z.reach
	s.counts[int64(i)*z.m+b%z.m] = e
	s.heads[i] = head{end: (b + 1) * z.span, inside: float64(e)}
}

// lastActive returns the time of the newest counted request of slot i at
// the latest: the end of the sub-window last written, or the newest
// admitted timestamp (for a key with none: when it was created). Denied
// requests store nothing, so they do not count as activity; a client kept
// at its limit is protected by its count instead (see evict).
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

// load returns what evicting slot i at t would forget: its count at t,
// with the leaving sub-window counted whole, and when that count stops
// counting. The count is 0 when nothing counts any more.
func (s *shard) load(z *Zone, i uint32, t int64) (uint32, int64) {
	if z.log {
		return s.logs[i].load(z, t)
	}
	h := &s.heads[i]
	until := h.end + z.resetTail
	if h.inside == 0 && h.leaving == 0 || until <= t {
		return 0, until // nothing written, or all of it gone
	}
	if t < h.end {
		whole := h.inside
		if z.weighted {
			// The leaving sub-window c-k; (c-k) mod m is (c+1) mod m.
			whole += float64(s.counts[int64(i)*z.m+(h.end/z.span)%z.m])
		}
		return uint32(whole), until
	}
	ring, newest := settle(z, s, i)
	whole := uint32(0)
	for b := t/z.span - z.reach + 1; b <= newest; b++ {
		whole += ring[b%z.m]
	}
	return whole, until
}

// evict makes room for one key. Keys only expire as time moves on, so a
// full shard first sweeps itself, at most once per sub-window (a tenth of
// the window for Log): under a flood of live keys that is one scan per
// sub-window, not one per insert. If that frees nothing, it removes, of a
// few sampled keys, the one whose loss matters least: one that counts
// nothing, or whose count the sketch already holds (a key seeded from it
// and not admitted since), else the one with the smallest count, the
// least recently active among equals. A key at its limit is only evicted
// when every key sampled is as heavy, so a flood of fresh keys with a
// request or two each cannot push out the clients it is meant to hide.
// What an evicted key still counted goes into the sketch, from which it
// comes back as an over-estimate, never as a fresh budget.
func (s *shard) evict(z *Zone, t int64) {
	if t >= s.purged+z.purgeGap {
		s.purged = t
		if s.sweepLocked(z, t) > 0 {
			return
		}
	}
	victim, seen := uint64(0), 0
	var count uint32
	var until, active int64
	for key, i := range s.index {
		c, u := s.load(z, i, t)
		if c == 0 || s.covered(s.sketchKey(key, i), c, u, t) {
			victim, count = key, 0
			if c > 0 {
				s.evictions++
			}
			break
		}
		a := s.lastActive(z, i)
		if seen == 0 || c < count || c == count && a < active {
			victim, count, until, active = key, c, u, a
		}
		seen++
		if seen == evictSample {
			break
		}
	}
	if count > 0 {
		s.evicted.add(z.perShard, s.sketchKey(victim, s.index[victim]), count, until, t)
		s.evictions++
	}
	s.remove(victim)
}

// covered reports whether the sketch already holds, for key at t, a count
// of at least count that lasts until at least until: evicting the key then
// loses nothing.
func (s *shard) covered(key uint64, count uint32, until, t int64) bool {
	if t >= s.evicted.live {
		return false
	}
	e, u := s.evicted.estimate(key, t)
	return e >= count && u >= until
}

// sketchKey returns the index in the sketch of the key hashed to key, in
// slot i: its hash, or its portable id in a zone with Options.Persist, so
// that a snapshot's sketch means the same in the next process.
func (s *shard) sketchKey(key uint64, i uint32) uint64 {
	if s.ids != nil {
		return s.ids[i]
	}
	return key
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
	s.Lock()
	defer s.Unlock()
	return s.sweepLocked(z, t)
}

func (s *shard) sweepLocked(z *Zone, t int64) int {
	removed := 0
	if s.banned != nil {
		s.sweepBans(t)
	}
	for key, i := range s.index {
		if s.expired(z, i, t) {
			s.remove(key)
			removed++
		}
	}
	return removed
}
