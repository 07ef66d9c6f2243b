package lease

import (
	"context"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Take decides one request on key, at limit (0: the rule's), at now: from
// the lease this instance holds on key when it has units left and their
// sub-window is still the newest, otherwise through the guard, asking for
// a lease when key is hot here. It is a plain function, not a method:
// under yaegi a method call costs several function calls, and Take is the
// Traefik plugin's every request with leases on.
func Take(t *Table, ctx context.Context, key string, limit int64, now time.Time) ratelimit.Decision {
	if limit <= 0 {
		limit = t.limit
	}
	mono := int64(now.Sub(t.base))
	s := &t.slots[maphash.String(t.seed, key)&t.mask]
	s.mu.Lock()
	if s.units >= t.cost && mono < s.expires && s.key == key && s.limit == limit {
		s.units -= t.cost
		s.seen++
		d := ratelimit.Decision{Allowed: true, Limit: limit, Remaining: s.left + s.units, ResetAfter: time.Duration(s.resetAt - mono)}
		s.mu.Unlock()
		atomic.AddUint64(&t.saved, 1)
		return d
	}
	return miss(t, ctx, s, key, limit, now, mono)
}

// miss is Take without a lease to spend; s is locked. It ends the lease
// s holds, if any, counts key's demand and decides the request through
// the guard, asking for a lease when key is hot. A request that finds
// another key's live lease in s is decided alone; one that finds a lease
// call for key in flight waits for its answer, once.
func miss(t *Table, ctx context.Context, s *slot, key string, limit int64, now time.Time, mono int64) ratelimit.Decision {
	if s.key != key || s.limit != limit {
		if s.pending != nil || s.units > 0 && mono < s.expires {
			s.mu.Unlock()
			return decide(t, ctx, key, limit, now, 0)
		}
		back := takeBack(t, s)
		s.key, s.limit, s.period, s.seen, s.prev, s.size, s.early, s.edge = key, limit, mono, 0, 0, 0, false, 0
		s.mu.Unlock()
		back.later(t)
		s.mu.Lock()
		if s.key != key || s.limit != limit {
			s.mu.Unlock()
			return decide(t, ctx, key, limit, now, 0)
		}
	}
	if s.size > 0 && s.units < t.cost && mono < s.expires {
		s.early = true // spent before it expired: ask for more
	}
	back := takeBack(t, s)
	if mono-s.period >= t.span {
		s.prev = 0
		if mono-s.period < 2*t.span {
			s.prev = s.seen
		}
		s.period, s.seen = mono, 0
	}
	s.seen++
	b := want(t, s, mono)
	if b > 0 && s.pending != nil {
		ch := s.pending
		s.mu.Unlock()
		back.later(t)
		return await(t, ctx, s, ch, key, limit, now)
	}
	var ch chan struct{}
	if b > 0 {
		ch = make(chan struct{})
		s.pending = ch
	}
	s.mu.Unlock()
	back.later(t)
	d := decide(t, ctx, key, limit, now, b)
	if b > 0 {
		s.mu.Lock()
		s.pending = nil
		close(ch)
		back = install(t, s, key, limit, mono, d)
		s.mu.Unlock()
		back.later(t)
		// The units are this instance's to admit: Remaining is what a
		// per-request decision would report, as for the requests that
		// spend them (left + units), not net of them.
		d.Remaining += d.Leased
	}
	return d
}

// await waits for the lease call ch stands for, then spends from what it
// granted, or decides the request alone.
func await(t *Table, ctx context.Context, s *slot, ch chan struct{}, key string, limit int64, now time.Time) ratelimit.Decision {
	select {
	case <-ch:
	case <-ctx.Done():
	}
	mono := int64(t.now().Sub(t.base)) // time passed while waiting
	s.mu.Lock()
	if s.units >= t.cost && mono < s.expires && s.key == key && s.limit == limit {
		s.units -= t.cost
		d := ratelimit.Decision{Allowed: true, Limit: limit, Remaining: s.left + s.units, ResetAfter: time.Duration(s.resetAt - mono)}
		s.mu.Unlock()
		atomic.AddUint64(&t.saved, 1)
		return d
	}
	s.mu.Unlock()
	return decide(t, ctx, key, limit, now, 0)
}

// want returns the units to ask for on a request of the key s holds: none
// while the key is cold here or t is closed; else the demand of a
// sub-window's part that is left of the current one, at least twice the
// last lease if that ran out early, at most t.max.
func want(t *Table, s *slot, mono int64) int64 {
	n := s.seen
	if s.prev > n {
		n = s.prev
	}
	if n < HotAfter || t.max == 0 || atomic.LoadInt32(&t.closed) != 0 {
		return 0
	}
	b := n * t.cost
	if s.edge != 0 {
		// A lease lasts to the end of the sub-window: ask for the part of
		// a sub-window's demand that falls in what is left of it. The
		// last lease's expiry marks where the server's sub-windows end.
		rest := t.span - (mono-s.edge)%t.span
		if mono < s.edge {
			rest = s.edge - mono
		}
		b = (b*rest+t.span-1)/t.span + t.cost
	}
	if s.early && 2*s.size > b {
		b = 2 * s.size
	}
	if b > t.max {
		b = t.max
	}
	if b < 3*t.cost {
		// A lease that may go unspent costs a call to give back: too
		// small a one saves nothing.
		return 0
	}
	return b
}

// decide decides the request through the guard, asking for b units of
// lease.
func decide(t *Table, ctx context.Context, key string, limit int64, now time.Time, b int64) ratelimit.Decision {
	if b == 0 && limit == t.limit {
		return ratelimit.TakeRemote(t.guard, ctx, t.zone, key, now)
	}
	it := []ratelimit.Item{{Zone: t.zone, Key: key, Lease: b}}
	if limit != t.limit {
		it[0].Limit = limit
	}
	out := make([]ratelimit.Decision, 1)
	t.guard.Take(ctx, now, it, out)
	return out[0]
}

// install keeps the lease that d granted in s, which holds key, asked at
// mono; s is locked. A lease that already expired, or that s cannot take,
// is returned to be given back.
func install(t *Table, s *slot, key string, limit int64, mono int64, d ratelimit.Decision) giveBack {
	if d.Leased <= 0 {
		return giveBack{}
	}
	atomic.AddUint64(&t.leases, 1)
	atomic.AddUint64(&t.granted, uint64(d.Leased))
	expires := mono + int64(d.LeaseFor)
	left := time.Duration(expires - int64(t.now().Sub(t.base)))
	if s.key != key || s.limit != limit || s.units > 0 || left <= 0 || atomic.LoadInt32(&t.closed) != 0 {
		return giveBack{item: ratelimit.Item{Zone: t.zone, Key: key, Limit: limit}, grant: d, units: d.Leased}
	}
	s.units, s.expires, s.grant, s.left = d.Leased, expires, d, d.Remaining
	s.resetAt = mono + int64(d.ResetAfter)
	s.size, s.early, s.edge = d.Leased, false, expires
	s.gen++
	gen := s.gen
	s.stop = t.after(left, func() { expire(t, s, gen) })
	return giveBack{}
}
