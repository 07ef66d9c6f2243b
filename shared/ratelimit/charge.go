package ratelimit

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Charger counts requests after the fact: a host checks a request with
// Deferred items, lets it through, and charges the items whose zone counts
// the response it got (count_status). A charge is unconditional: it records
// what happened, so a key may end above its limit when several of its
// requests passed the check at once; it is then denied until enough of
// them leave the window.
type Charger interface {
	Charge(ctx context.Context, now time.Time, items []Item) error
}

// Charge implements Charger.
func (Memory) Charge(_ context.Context, now time.Time, items []Item) error {
	ChargeAll(now, items)
	return nil
}

// ChargeAll counts the request in every zone of items, whatever their
// counts, in memory.
func ChargeAll(now time.Time, items []Item) {
	t := now.UnixNano()
	for i := range items {
		z := items[i].Zone
		k := z.hash(items[i].Key)
		s := &z.shards[k&z.mask]
		s.Lock()
		charge(z, s, k, t, items[i].limit())
		s.Unlock()
	}
}

// charge counts a request at t on the key hashed to key in the locked
// shard s, as take does for an admission, without deciding. limit is the
// key's N, which bounds what a Log ring keeps.
func charge(z *Zone, s *shard, key uint64, t int64, limit int64) {
	if t < z.window {
		t = z.window
	} else if t > z.maxTime {
		t = z.maxTime
	}
	if z.log {
		chargeLog(z, s, key, t, int(limit))
		return
	}
	slot, known := s.index[key]
	if !known {
		slot = newSlot(z, s, key, t)
	}
	h := &s.heads[slot]
	t = headTime(z, h, t)
	if t >= h.end {
		ring, newest := settle(z, s, slot)
		cur := headAt(z, ring, newest, t/z.span)
		roll(z, ring, newest, t/z.span)
		*h = cur
	}
	h.inside += z.cost
}

// chargeLog counts a request at t in a Log zone. The ring keeps at most
// the limit's newest timestamps: those decide every later request (the
// older ones leave the window first), so dropping the oldest when a
// charge goes over the limit changes no decision.
func chargeLog(z *Zone, s *shard, key uint64, t int64, limit int) {
	slot, ok := s.index[key]
	if !ok {
		slot = newSlot(z, s, key, t)
	}
	r := &s.logs[slot]
	t, old := logAt(z, r, t)
	if old > 0 {
		r.head = (r.head + old) % len(r.ts)
		r.n -= old
	}
	for i := int64(0); i < z.rule.Cost; i++ {
		for r.n >= limit {
			r.head = (r.head + 1) % len(r.ts)
			r.n--
		}
		r.push(t, limit)
	}
	r.newest = t
}

// Charge implements Charger. The error is always nil: a failed charge is
// logged and trips the breaker as a failed take does, and FailLocal counts
// it in memory instead. While the breaker is open, charges go to the
// policy's store without trying the remote one. Redis over its maxmemory
// refuses a charge: that is logged on its own schedule, as for a take.
func (g *Guard) Charge(ctx context.Context, now time.Time, items []Item) error {
	c, ok := g.remote.(Charger)
	if !ok {
		return nil
	}
	if g.breaker != nil && g.breaker.open() {
		g.policy.charge(now, items)
		return nil
	}
	err := c.Charge(ctx, now, items)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrOutOfMemory):
		atomic.AddUint64(&g.outOfMemory, 1)
		g.oomErrs.report(err, now)
	default:
		atomic.AddUint64(&g.failures, 1)
		if g.breaker != nil && ctx.Err() == nil {
			g.breaker.trip()
		}
		g.errs.report(err, now)
	}
	g.policy.charge(now, items)
	return nil
}

// charge counts items by the policy, without the remote store: in memory
// for FailLocal, nowhere otherwise.
func (p FailurePolicy) charge(now time.Time, items []Item) {
	if p == FailLocal {
		ChargeAll(now, items)
	}
}
