package ratelimit

import (
	"context"
	"hash/maphash"
	"time"
)

// Refunder gives back requests counted by Refundable items: a host
// reserves a request's count when it admits it, and refunds it once the
// response shows it must not count (count_status). Only counts whose
// sub-window (or log entry) still holds them come back, each at most once
// per receipt and never below zero; a count that moved on, through time,
// an eviction or a reload that changed the rule, stays.
type Refunder interface {
	// Refund gives back the count of every Refundable item of items whose
	// decision in out, as Take returned it, holds a receipt.
	Refund(ctx context.Context, items []Item, out []Decision) error
}

// Refund implements Refunder.
func (Memory) Refund(_ context.Context, items []Item, out []Decision) error {
	refundAll(items, out)
	return nil
}

// refundAll gives back, in memory, the counts of the Refundable items
// whose decisions hold a receipt of the in-memory zones, and spends those
// receipts (see RefundAt).
func refundAll(items []Item, out []Decision) {
	for i := range items {
		if items[i].Refundable {
			RefundAt(items[i].Zone, items[i].Key, &out[i])
		}
	}
}

// TakeReservedAt decides one Refundable request on key at now, under
// limit (0: the rule's), and counts it if it is allowed, as TakeAll does
// one Refundable item; the decision then holds the receipt RefundAt takes
// the count back by. It spares a host that reserves one count per request
// (count_status) TakeAll's ordering of many items, and, like TakeAt,
// writes out the common case under the rule's limit.
//
// A function, not a method: interpreted, the method costs more (see the
// package documentation).
func TakeReservedAt(z *Zone, key string, now time.Time, limit int64) Decision {
	t := now.UnixNano()
	k := maphash.String(z.seed, key)
	s := z.shardOf[k&z.mask] // see TakeAt
	s.Lock()
	slot := s.index[k]
	h := &s.heads[slot]
	if left := h.end - t; left > 0 && left <= z.span && limit <= 0 {
		if count := h.inside + h.leaving*float64(left)/z.spanF + z.cost; count <= z.limit {
			h.inside += z.cost
			r := Receipt{At: h.end - z.span, Generation: s.generations[slot]}
			s.Unlock()
			return Decision{Allowed: true, Limit: z.ruleLimit, Remaining: int64(z.limit - count), ResetAfter: duration(left + z.resetTail), Receipt: r}
		}
	}
	return takeReserved(z, s, key, k, t, limit)
}

// takeReserved is TakeReservedAt's every other case, with the shard s of
// key, hashed to k, locked; it unlocks s.
func takeReserved(z *Zone, s *shard, key string, k uint64, t int64, limit int64) Decision {
	if limit <= 0 {
		limit = z.ruleLimit
	}
	d := take(z, s, key, k, t, limit, true)
	if d.Allowed {
		d.Receipt = countedAt(z, s, k)
	}
	s.Unlock()
	return d
}

// RefundAt gives back, in memory, the count that d, an admitted decision
// on key in z from TakeReservedAt or TakeAll, reserved, and spends d's
// receipt: a second refund of d gives back nothing. A decision without an
// in-memory receipt gives back nothing. The common case, a refund in the
// sub-window the key is still in, is written out here: the ring's
// cell of the current sub-window is written from the head whenever it is
// read (see settle), and an unspent receipt of it stands for a count
// there. A head left counting nothing there counts nothing anywhere, and
// its ring must be empty (see headTime): the cell is cleared. A key
// forgotten or evicted since d was counted is another generation: its count
// gets nothing back.
//
// A function, not a method: interpreted, the method costs more (see the
// package documentation).
func RefundAt(z *Zone, key string, d *Decision) {
	at := d.Receipt.At
	if at == 0 || d.Receipt.Remote {
		return
	}
	d.Receipt.At = 0
	k := maphash.String(z.seed, key)
	s := z.shardOf[k&z.mask] // see TakeAt
	s.Lock()
	slot := s.index[k]
	if h := &s.heads[slot]; h.end-z.span == at && h.inside >= z.cost && s.generations[slot] == d.Receipt.Generation {
		if h.inside -= z.cost; h.inside == 0 {
			s.counts[int64(slot)*z.m+at/z.span%z.m] = 0
		}
		delete(s.denied, k)
		s.Unlock()
		return
	}
	refund(z, s, k, at, d.Receipt.Generation)
	s.Unlock()
}

// countedAt returns the receipt of the request just counted on the key
// hashed to key in the locked shard s: a time in the sub-window its head
// is in, or the newest timestamp of its log, and the key's generation.
func countedAt(z *Zone, s *shard, key uint64) Receipt {
	i := s.index[key]
	if z.log {
		return Receipt{At: s.logs[i].newest, Generation: s.generations[i]}
	}
	return Receipt{At: s.heads[i].end - z.span, Generation: s.generations[i]}
}

// refund takes the zone's cost back from the sub-window of time at (the
// log entry at at, for Log) of the key hashed to key in the locked shard
// s, if the key is still in the generation the receipt names and holds it
// there. The key's cached denial then goes: its count fell. A key left
// counting nothing is then as a new one (see headTime), as in a remote
// store, whose script deletes it.
func refund(z *Zone, s *shard, key uint64, at int64, generation uint64) {
	slot, ok := s.index[key]
	if !ok || s.generations[slot] != generation {
		return // swept, evicted or forgotten: what it counted is gone or summarized
	}
	if z.log {
		if s.logs[slot].remove(at, int(z.rule.Cost)) {
			delete(s.denied, key)
		}
		return
	}
	h := &s.heads[slot]
	c := h.end/z.span - 1
	b := at / z.span
	// The ring holds sub-windows c-k..c; of those, b must still count:
	// c-reach+1.. (Fixed counts c alone).
	if b > c || b <= c-z.reach {
		return
	}
	ring, _ := settle(z, s, slot)
	cell := &ring[b%z.m]
	if *cell < z.cost32 {
		return
	}
	*cell -= z.cost32
	switch {
	case b > c-z.k: // inside the window: counted whole
		h.inside -= z.cost
	case z.weighted: // the leaving sub-window of Sliding
		h.leaving -= z.cost
	default: // Strict counts the leaving sub-window whole
		h.inside -= z.cost
	}
	delete(s.denied, key)
}
