package ratelimit

import (
	"context"
	"errors"
	"sync/atomic"
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
	RefundAll(items, out)
	return nil
}

// RefundAll gives back, in memory, the counts of the Refundable items
// whose decisions hold a receipt of the in-memory zones.
func RefundAll(items []Item, out []Decision) {
	for i := range items {
		if r := out[i].receipt; items[i].Refundable && r.at != 0 && !r.remote {
			z := items[i].Zone
			k := z.hash(items[i].Key)
			s := &z.shards[k&z.mask]
			s.Lock()
			refund(z, s, k, r.at)
			s.Unlock()
		}
	}
}

// countedAt returns the receipt time of the request just counted on the
// key hashed to key in the locked shard s: a time in the sub-window its
// head is in, or the newest timestamp of its log.
func countedAt(z *Zone, s *shard, key uint64) int64 {
	i := s.index[key]
	if z.log {
		return s.logs[i].newest
	}
	return s.heads[i].end - z.span
}

// refund takes the zone's cost back from the sub-window of time at (the
// log entry at at, for Log) of the key hashed to key in the locked shard
// s, if the key still holds it there. The key's cached denial then goes:
// its count fell. A key left counting nothing
// is then as a new one (see headTime), as in Redis, where the script
// deletes it.
func refund(z *Zone, s *shard, key uint64, at int64) {
	slot, ok := s.index[key]
	if !ok {
		return // swept or evicted: what it counted is gone or summarized
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

// Refund implements Refunder. A count that FailLocal took in memory goes
// back there; a count in the remote store goes back there, unless the
// breaker is open (Redis is down: the count stays, the safe side). The
// error is always nil: a failed refund is logged and trips the breaker as
// a failed take does, and the count stays. A refunded key's cached denial
// goes, since its count fell; other instances keep theirs until it
// expires.
func (g *Guard) Refund(ctx context.Context, items []Item, out []Decision) error {
	RefundAll(items, out)
	remote := false
	for i := range items {
		if items[i].Refundable && out[i].receipt.remote {
			remote = true
			if g.denials != nil {
				g.denials.forget(&items[i])
			}
		}
	}
	rf, ok := g.remote.(Refunder)
	if !remote || !ok || g.breaker != nil && g.breaker.open() {
		return nil
	}
	givenBack(g, ctx, rf.Refund(ctx, items, out))
	return nil
}

// givenBack accounts for the error err of a call that gave counts back
// (a refund, a lease's unspent units): the count stays, and a failure is
// logged and trips the breaker as a failed take does, unless the call was
// never sent (our own backlog) or its caller left.
func givenBack(g *Guard, ctx context.Context, err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrOverloaded): // never sent: our own backlog
		atomic.AddUint64(&g.overloaded, 1)
		g.busyErrs.report(err, time.Now())
	default:
		atomic.AddUint64(&g.failures, 1)
		if g.breaker != nil && ctx.Err() == nil {
			g.breaker.trip()
		}
		g.errs.report(err, time.Now())
	}
}

// GiveBack returns the unspent units of a lease: units of those that
// Redis granted in d, as Take returned it for it (an Item with Lease set).
// They come off the sub-window they were counted in, if the key still
// holds them there; with the breaker open they stay counted (the safe
// side). A failure is logged and trips the breaker as a failed take does.
// The key's cached denial goes, since its count fell.
func (g *Guard) GiveBack(ctx context.Context, it Item, d Decision, units int64) {
	if units <= 0 || g.redis == nil || !d.receipt.remote {
		return
	}
	if g.denials != nil {
		g.denials.forget(&it)
	}
	if g.breaker != nil && g.breaker.open() {
		return
	}
	givenBack(g, ctx, g.redis.giveBack(ctx, it.Zone, it.Key, it.limit(), &d, units))
}
