package ratelimit

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// persistState is what a zone with Options.Persist keeps for snapshots:
// the salt of its keys' portable ids, what a restore left to claim, and
// when the zone was last saved and restored.
//
// A zone holds its keys as maphash hashes, whose seed, and the runtime's
// hash key under it, are new in every process: a snapshot of them would
// name no key in the next one. So a persisted zone also gives each key a
// portable id, the first 8 bytes of SHA-256(salt || key), computed once
// when the key is created (never on the path of a known key). The salt is
// random per zone lineage and travels in the snapshot, so that a client
// cannot aim its key at another's id, and a restored zone names its keys
// as its predecessor did. A restored key cannot be put in its shard until
// its first request (the shard is chosen by the new hash): until then it
// waits in the restored snapshot, found by id, and newSlot claims it.
//
// The restored snapshot does not change once restored: a claim only
// clears its entry's flag in waiting. So a snapshot of the zone encodes
// the entries still waiting without p.mu, which new keys take under
// their shard's lock (see unclaimed): at a million restored keys, holding
// it for the encoding stalled every new key for half a second.
type persistState struct {
	// salt prefixes every key hashed to an id. NewZone draws it; Restore
	// replaces it, before the zone takes a request.
	salt [16]byte
	// scope is Options.Scope, written in every snapshot and checked by
	// Restore.
	scope string
	// live is the Unix nanosecond at which the last restored entry, or
	// sketch cell, stops counting: from then on no new key looks at what a
	// restore left. Read atomically on the new-key path; 0 when nothing
	// restored is left.
	live int64

	mu sync.Mutex
	// index maps the id of a restored key to its entry in from.
	index map[uint64]int
	// waiting[j] is 1 while entry j of from waits to be claimed, else 0:
	// written under mu, read atomically by snapshots, which do not hold
	// it. Entries not in index are 0.
	waiting []uint32
	// pending counts the entries that wait.
	pending int
	from    *snapshot
	// sketch is the restored summary of evicted keys, every shard's folded
	// into one, indexed by id; nil when none.
	sketch *sketch
	// claimed counts the restored keys seen again since the last restore.
	claimed int
	// bans holds the restored bans that hold and wait for their keys, by
	// id, and nbans how many (read atomically: see claimBan).
	bans  map[uint64]int64
	nbans int64

	// bufMu guards buf, the encoding buffer of the last snapshot, which
	// the next reuses: a snapshot of a million keys would otherwise leave
	// tens of megabytes of garbage at every interval, and the collections
	// it sets off stall requests far longer than the encoding does.
	bufMu sync.Mutex
	buf   []byte
}

// takeBuf returns the buffer of the last snapshot, emptied, with room for
// n bytes; putBuf gives it back for the next. Two snapshots at once (the
// saver's and an operator's) take one each.
func (p *persistState) takeBuf(n int) []byte {
	p.bufMu.Lock()
	b := p.buf
	p.buf = nil
	p.bufMu.Unlock()
	if cap(b) < n {
		// A quarter more, so that a zone that grows between snapshots
		// does not need a new buffer for every one.
		return make([]byte, 0, n+n/4)
	}
	return b[:0]
}

func (p *persistState) putBuf(b []byte) {
	p.bufMu.Lock()
	p.buf = b
	p.bufMu.Unlock()
}

// Scope returns Options.Scope of a zone that keeps snapshots, else "".
func (z *Zone) Scope() string {
	if z.persist == nil {
		return ""
	}
	return z.persist.scope
}

func newPersistState() *persistState {
	p := &persistState{}
	if _, err := rand.Read(p.salt[:]); err != nil {
		// crypto/rand does not fail on supported systems; a fixed salt
		// only makes ids guessable, never a count wrong.
		binary.LittleEndian.PutUint64(p.salt[:], uint64(time.Now().UnixNano()))
	}
	return p
}

// id returns key's portable id: the first 8 bytes of SHA-256(salt || key).
func (p *persistState) id(key string) uint64 {
	b := make([]byte, len(p.salt)+len(key))
	copy(b, p.salt[:])
	copy(b[len(p.salt):], key)
	sum := sha256.Sum256(b)
	return binary.LittleEndian.Uint64(sum[:8])
}

// restoredLive returns the time until which something restored counts.
func (p *persistState) restoredLive() int64 { return atomic.LoadInt64(&p.live) }

// claim seeds slot i of shard s, just created for the key of id at t,
// from what a restore left: its own entry, exactly as the previous
// process held it, or else the restored summary of evicted keys, if that
// says more than the slot holds. The caller holds s locked (the lock
// order is a shard, then p.mu).
func (p *persistState) claim(z *Zone, s *shard, i uint32, id uint64, t int64, limit int64) {
	p.mu.Lock()
	j, ok := p.take(id)
	if ok {
		p.claimed++
	}
	from := p.from
	var e uint32
	var until int64
	if !ok && p.sketch != nil {
		e, until = p.sketch.estimate(id, t)
	}
	if p.pending == 0 && (p.sketch == nil || t >= p.sketch.live) {
		p.dropRestored()
	}
	p.mu.Unlock()
	if ok {
		from.restoreEntry(z, s, i, j, t, limit)
		return
	}
	if e == 0 {
		return
	}
	c, u := s.load(z, i, t)
	if e <= c && until <= u {
		return
	}
	if c > e {
		e = c
	}
	if u > until {
		until = u
	}
	if z.log {
		s.logs[i].reset(t)
	}
	s.seed(z, i, e, until, limit)
	s.estimated++
}

// dropRestored forgets what a restore left. The caller holds p.mu.
func (p *persistState) dropRestored() {
	// One assignment each (see the package documentation).
	p.index = nil
	p.waiting = nil
	p.pending = 0
	p.from = nil
	p.sketch = nil
	atomic.StoreInt64(&p.live, 0)
}

// forget drops the restored entry of the key of id, if it waits to be
// claimed, and reports whether it did.
func (p *persistState) forget(id uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.take(id)
	return ok
}

// take marks the restored entry of the key of id claimed, if it waits,
// and returns it. The caller holds p.mu.
func (p *persistState) take(id uint64) (int, bool) {
	j, ok := p.index[id]
	if !ok || atomic.LoadUint32(&p.waiting[j]) == 0 {
		return 0, false
	}
	atomic.StoreUint32(&p.waiting[j], 0)
	p.pending--
	return j, true
}

// inspect returns what a restore left for the key of id at t: the count
// it would start with and when that stops counting, or 0.
func (p *persistState) inspect(z *Zone, id uint64, t int64) (int64, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if j, ok := p.index[id]; ok && atomic.LoadUint32(&p.waiting[j]) != 0 {
		return p.from.entryLoad(z, j, t)
	}
	if p.sketch != nil {
		e, until := p.sketch.estimate(id, t)
		return int64(e), until
	}
	return 0, 0
}

// adopt makes sn what a restore left: pending maps the id of each of its
// entries that still counts to the entry, sk is its summary of evicted
// keys if that still counts, and live when the last of them stops
// counting.
func (p *persistState) adopt(sn *snapshot, pending map[uint64]int, sk *sketch, live int64) {
	waiting := make([]uint32, len(sn.ids))
	for _, j := range pending {
		waiting[j] = 1
	}
	p.mu.Lock()
	p.salt = sn.salt
	p.index = pending
	p.waiting = waiting
	p.pending = len(pending)
	p.from = sn
	p.sketch = sk
	p.claimed = 0
	atomic.StoreInt64(&p.live, live)
	if len(pending) == 0 && sk == nil {
		p.dropRestored()
	}
	p.mu.Unlock()
}

// waitingLen returns how many restored keys wait to be claimed.
func (p *persistState) waitingLen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pending
}

// unclaimed returns what a snapshot at t must hold of what a restore
// left: the restored snapshot, its entries' waiting flags (to be read
// atomically: a claim clears one at any time), and its summary of
// evicted keys; all nil when nothing restored counts at t. It holds p.mu
// only to read them.
//
// A snapshot reads the flags before it copies the shards: an entry
// claimed before its flag is read is in its shard by then, one claimed
// after is in the snapshot from the flag, and perhaps from its shard too,
// which Restore merges (see snapshot.merge). Read the other way round, a
// key claimed between its shard's copy and its flag would be in neither.
func (p *persistState) unclaimed(t int64) (*snapshot, []uint32, *sketch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.from != nil && t >= atomic.LoadInt64(&p.live) {
		p.dropRestored() // everything restored has stopped counting
	}
	return p.from, p.waiting, p.sketch
}

// afterUnclaimed, if not nil, runs in every snapshot between reading what
// a restore left and copying the shards: tests claim keys there.
var afterUnclaimed func()
