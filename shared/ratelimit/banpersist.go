package ratelimit

import (
	"encoding/binary"
	"sync/atomic"
)

// A persisted zone with a ban (Options.Persist and Options.Ban) keeps its
// bans across a restart. A ban is held by its key's hash, which is new in
// every process, so such a zone also keeps each ban's portable id
// (shard.banIDs), and a snapshot holds the id and the ban's end in wall-
// clock nanoseconds. A restored ban waits in persistState.bans, by id,
// until its key's first request claims it into its shard (see
// claimBan): the snapshot's keys do the same.
//
// In the file, version 3 is version 2 with, after the summary of evicted
// keys and before the checksum:
//
//	bans uv | per ban: id u64 | end uv
//
// A zone without a ban writes version 2, byte for byte as before; a zone
// reads both, and a zone without a ban drops the bans of a version 3.

// banRecord is a ban in a snapshot: the key's portable id and when the
// ban ends, in Unix nanoseconds.
type banRecord struct {
	id    uint64
	until int64
}

// banBytes returns the most bytes a snapshot of z spends on bans: twice
// as many as it holds (its own and as many restored), at their largest.
func (z *Zone) banBytes() int64 {
	if z.ban <= 0 {
		return 0
	}
	return binary.MaxVarintLen64 + 2*int64(z.maxKeys)*(8+binary.MaxVarintLen64)
}

// noteBanID records the portable id of the ban just started on key,
// hashed to k, in the locked shard s of a persisted zone.
func noteBanID(z *Zone, s *shard, key string, k uint64) {
	if s.banIDs == nil {
		s.banIDs = make(map[uint64]uint64)
	}
	s.banIDs[k] = z.persist.id(key)
}

// claimBan moves the restored ban of key, hashed to k, into its locked
// shard s, if one waits and still holds at t, and returns its end (0 if
// none). Only persisted zones with a ban restored bans; the others find
// none without a lock.
func claimBan(z *Zone, s *shard, key string, k uint64, t int64) int64 {
	p := z.persist
	if p == nil || atomic.LoadInt64(&p.nbans) == 0 {
		return 0
	}
	id := p.id(key)
	p.mu.Lock()
	until, ok := p.bans[id]
	if ok {
		delete(p.bans, id)
		atomic.AddInt64(&p.nbans, -1)
	}
	p.mu.Unlock()
	if !ok || until <= t {
		return 0
	}
	if s.banned == nil {
		s.banned = make(map[uint64]int64)
	}
	s.banned[k] = until
	if s.banIDs == nil {
		s.banIDs = make(map[uint64]uint64)
	}
	s.banIDs[k] = id
	return until
}

// forgetBan drops the restored ban of the key of id, if one waits, and
// reports whether it did.
func (p *persistState) forgetBan(id uint64) bool {
	if atomic.LoadInt64(&p.nbans) == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.bans[id]; !ok {
		return false
	}
	delete(p.bans, id)
	atomic.AddInt64(&p.nbans, -1)
	return true
}

// restoredBan returns when the restored ban of the key of id ends, if
// one waits (0 if none).
func (p *persistState) restoredBan(id uint64) int64 {
	if atomic.LoadInt64(&p.nbans) == 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bans[id]
}

// adoptBans makes the bans of a restored snapshot that still hold at t
// wait for their keys.
func (p *persistState) adoptBans(bans []banRecord, t int64) {
	m := make(map[uint64]int64)
	for _, b := range bans {
		if b.until > t && b.until > m[b.id] {
			m[b.id] = b.until
		}
	}
	p.mu.Lock()
	p.bans = m
	atomic.StoreInt64(&p.nbans, int64(len(m)))
	p.mu.Unlock()
}

// appendBans appends to out the bans of z that hold at t: those of its
// shards, each under its lock, and those restored and not claimed yet.
func (z *Zone) appendBans(out []banRecord, t int64) []banRecord {
	for i := range z.shards {
		s := &z.shards[i]
		s.Lock()
		for k, until := range s.banned {
			if until > t {
				out = append(out, banRecord{id: s.banIDs[k], until: until})
			}
		}
		s.Unlock()
	}
	if p := z.persist; atomic.LoadInt64(&p.nbans) > 0 {
		p.mu.Lock()
		for id, until := range p.bans {
			if until > t {
				out = append(out, banRecord{id: id, until: until})
			}
		}
		p.mu.Unlock()
	}
	return out
}

// appendBanSection appends the bans of a version 3 snapshot.
func appendBanSection(b []byte, bans []banRecord) []byte {
	b = binary.AppendUvarint(b, uint64(len(bans)))
	for _, r := range bans {
		b = binary.LittleEndian.AppendUint64(b, r.id)
		b = binary.AppendUvarint(b, uint64(r.until))
	}
	return b
}

// readBans reads the bans of a version 3 snapshot: at most lim.keys, each
// ending before maxSnapshotTime.
func (r *reader) readBans(lim snapshotLimits) []banRecord {
	n := r.uvarint("ban count")
	if r.err == nil && (n > lim.keys || n > uint64(len(r.b))/9) {
		r.fail("more bans than bytes or than the zone holds")
	}
	if r.err != nil || n == 0 {
		return nil
	}
	bans := make([]banRecord, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		id := r.u64("ban id")
		until := r.uvarint("ban end")
		if r.err == nil && until >= uint64(maxSnapshotTime) {
			r.fail("ban end out of range")
		}
		bans = append(bans, banRecord{id: id, until: int64(until)})
	}
	return bans
}
