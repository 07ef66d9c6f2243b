package ratelimit

import (
	"sync/atomic"
	"time"
)

// appendSnapshot appends to b the file bytes of a snapshot of z at now,
// encoded as it goes rather than from a whole snapshot held in memory: a
// bucket shard's slabs are copied under its lock and encoded from the
// copy. At a million keys that is 60 MB less garbage a snapshot. It
// returns the bytes and the number of keys. z must have Options.Persist.
// The tests check it against the whole-snapshot encoder it replaced
// (snapshot_reference_test.go), byte for byte but for the keys' order.
func (z *Zone) appendSnapshot(b []byte, now time.Time) ([]byte, int) {
	p := z.persist
	t := now.UnixNano()
	b, count := appendHeader(b, z.name, p.scope, z.window, z.span, z.rule.Algorithm, t, &p.salt)
	keys := 0
	// What a restore left first, without a lock: see persistState.unclaimed.
	from, waiting, restored := p.unclaimed(t)
	if from != nil {
		m := from.ring()
		for j := range waiting {
			if atomic.LoadUint32(&waiting[j]) == 0 {
				continue
			}
			if from.algorithm == Log {
				b = appendLogEntry(b, from.ids[j], from.ts[from.off[j]:from.off[j]+from.cnt[j]])
			} else {
				b = appendBucketEntry(b, from.ids[j], from.newest[j], from.cells[j*m:(j+1)*m])
			}
			keys++
		}
	}
	if afterUnclaimed != nil {
		afterUnclaimed()
	}
	var sk *sketch
	var cp shardCopy
	cells := make([]uint32, z.m)
	var ts []int64
	for si := range z.shards {
		s := &z.shards[si]
		if !z.log {
			cp.take(s, &sk)
			for i := 1; i < len(cp.heads); i++ {
				if c := cp.cells(z, i, cells); c >= 0 {
					b = appendBucketEntry(b, cp.ids[i], c, cells)
					keys++
				}
			}
			continue
		}
		s.Lock()
		for _, i := range s.index {
			r := &s.logs[i]
			if r.n == 0 {
				continue
			}
			ts = ts[:0]
			for j := 0; j < r.n; j++ {
				ts = append(ts, r.at(j))
			}
			b = appendLogEntry(b, s.ids[i], ts)
			keys++
		}
		if s.evicted.counts != nil {
			sk = foldInto(sk, &s.evicted)
		}
		s.Unlock()
	}
	if restored != nil {
		sk = foldInto(sk, restored)
	}
	var bans []banRecord
	if z.ban > 0 {
		bans = z.appendBans(nil, t)
	}
	return finish(b, count, keys, sk, bans, z.ban > 0), keys
}
