package ratelimit

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"
)

// The whole-snapshot encoder that the streaming one (snapshotstream.go)
// replaced, kept as the tests' reference: a snapshot taken into memory,
// then marshalled, must be the bytes the stream writes.

// len returns the number of keys the snapshot holds.
func (sn *snapshot) len() int { return len(sn.ids) }

// takeSnapshot returns the state of every key of the zone that counts at
// now, with its summary of evicted keys and what a restore left
// unclaimed. It locks one shard at a time, never the whole zone, so
// requests on other shards go on meanwhile; a request decided while it
// runs is in the snapshot or not, whole. It fails only for a zone
// without Options.Persist.
func (z *Zone) takeSnapshot(now time.Time) (*snapshot, error) {
	p := z.persist
	if p == nil {
		return nil, errors.New("zone " + strconv.Quote(z.name) + " keeps no snapshots (Options.Persist is off)")
	}
	t := now.UnixNano()
	sn := &snapshot{name: z.name, scope: p.scope, window: z.window, subWindow: z.span, algorithm: z.rule.Algorithm, taken: t, salt: p.salt, version: snapshotNoBans}
	if z.ban > 0 {
		sn.version, sn.bans = snapshotVersion, z.appendBans(nil, t)
	}
	// Room for every key up front, so that no slab grows under a lock.
	n := z.Len()
	n += n/16 + 16
	sn.ids = make([]uint64, 0, n)
	if z.log {
		sn.off = make([]int, 0, n)
		sn.cnt = make([]int, 0, n)
	} else {
		sn.newest = make([]int64, 0, n)
		sn.cells = make([]uint32, 0, n*int(z.m))
	}
	// What a restore left first: see persistState.unclaimed.
	from, waiting, restored := p.unclaimed(t)
	for j := range waiting {
		if atomic.LoadUint32(&waiting[j]) != 0 {
			sn.appendFrom(from, j)
		}
	}
	if afterUnclaimed != nil {
		afterUnclaimed()
	}
	var cp shardCopy
	for si := range z.shards {
		s := &z.shards[si]
		if !z.log {
			cp.take(s, &sn.sk)
			sn.appendCopy(z, &cp)
			continue
		}
		s.Lock()
		for _, i := range s.index {
			sn.appendLog(&s.logs[i], s.ids[i])
		}
		if s.evicted.counts != nil {
			sn.fold(&s.evicted)
		}
		s.Unlock()
	}
	if restored != nil {
		sn.fold(restored)
	}
	return sn, nil
}

// appendCopy adds every key of a shard's copy that holds a count.
func (sn *snapshot) appendCopy(z *Zone, cp *shardCopy) {
	out := make([]uint32, z.m)
	for i := 1; i < len(cp.heads); i++ {
		if c := cp.cells(z, i, out); c >= 0 {
			sn.ids = append(sn.ids, cp.ids[i])
			sn.newest = append(sn.newest, c)
			sn.cells = append(sn.cells, out...)
		}
	}
}

// appendLog adds the log r of the key of id, if it holds a timestamp.
func (sn *snapshot) appendLog(r *logRing, id uint64) {
	if r.n == 0 {
		return
	}
	sn.ids = append(sn.ids, id)
	sn.off = append(sn.off, len(sn.ts))
	sn.cnt = append(sn.cnt, r.n)
	for j := 0; j < r.n; j++ {
		sn.ts = append(sn.ts, r.at(j))
	}
}

// appendFrom adds entry j of from, a snapshot of the same shape.
func (sn *snapshot) appendFrom(from *snapshot, j int) {
	sn.ids = append(sn.ids, from.ids[j])
	if sn.algorithm == Log {
		sn.off = append(sn.off, len(sn.ts))
		sn.cnt = append(sn.cnt, from.cnt[j])
		sn.ts = append(sn.ts, from.ts[from.off[j]:from.off[j]+from.cnt[j]]...)
		return
	}
	m := sn.ring()
	sn.newest = append(sn.newest, from.newest[j])
	sn.cells = append(sn.cells, from.cells[j*m:(j+1)*m]...)
}

// fold merges the cells of src that were ever written into the
// snapshot's summary of evicted keys: a cell keeps the largest count and
// the latest end of what falls into it, so that it never says less than
// any key in it, whatever the clock reads when it is restored. A cell's
// index is the top bits of a key's id, so sketches of different widths
// fold into each other by prefix.
func (sn *snapshot) fold(src *sketch) { sn.sk = foldInto(sn.sk, src) }

// marshal encodes the snapshot in the file format above.
func (sn *snapshot) marshal() ([]byte, error) {
	m := sn.ring()
	// The usual size (a byte a small count), not the largest: append
	// grows the rest.
	size := 64 + len(sn.name) + len(sn.scope) + len(sn.ids)*(8+5+m) + len(sn.ts)*4
	if sn.sk != nil {
		size += 16 + len(sn.sk.counts)*20
	}
	b, count := appendHeader(make([]byte, 0, size), sn.name, sn.scope, sn.window, sn.subWindow, sn.algorithm, sn.taken, &sn.salt)
	for j, id := range sn.ids {
		if sn.algorithm == Log {
			b = appendLogEntry(b, id, sn.ts[sn.off[j]:sn.off[j]+sn.cnt[j]])
		} else {
			b = appendBucketEntry(b, id, sn.newest[j], sn.cells[j*m:(j+1)*m])
		}
	}
	return finish(b, count, len(sn.ids), sn.sk, sn.bans, sn.version == snapshotVersion), nil
}

// sketchBytes returns the memory the sketch's slabs take once allocated.
func sketchBytes(perShard int) int {
	width, _ := sketchWidth(perShard)
	return sketchRows * width * (4 + 8)
}
