package lease

import (
	"context"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// Take decides one request on key, at limit (0: the rule's), at now: from
// the lease this instance holds on key when it has units left and their
// sub-window is still the newest, otherwise through the guard, asking for
// a lease when key is hot here.
//
// A function, not a method: it is the Traefik plugin's every request with
// leases on, where a method costs more (see the package documentation).
func Take(ctx context.Context, t *Table, key string, limit int64, now time.Time) ratelimit.Decision {
	if limit <= 0 {
		limit = t.limit
	}
	mono := int64(now.Sub(t.base))
	s := t.slotOf[maphash.String(t.seed, key)&t.mask]
	s.Lock()
	if s.units >= t.cost && mono < s.expires && s.key == key && s.limit == limit {
		if s.units <= s.low {
			return renew(ctx, t, s, key, limit, now, mono)
		}
		s.units -= t.cost
		s.seen++
		d := decision{Allowed: true, Limit: limit, Remaining: s.left + s.units, ResetAfter: duration(s.resetAt - mono)}
		s.saved++
		s.Unlock()
		return d
	}
	return coldMiss(ctx, t, s, key, limit, now, mono)
}

// decision and duration are ratelimit.Decision and time.Duration under
// names of this package: interpreted, another package's name costs Take
// and coldMiss a frame slot.
type (
	decision = ratelimit.Decision
	duration = time.Duration
)

// renew is Take for the request that finds the lease in s running low (a
// quarter of its last grant left): while the other requests spend what is
// left, this one is decided through the guard, asking for what the key
// will want for the rest of the sub-window, so that the lease seldom runs
// out and no request waits for another's call. When the units left
// should last, it spends one as Take does. s is locked.
func renew(ctx context.Context, t *Table, s *slot, key string, limit int64, now time.Time, mono int64) ratelimit.Decision {
	period(t, s, mono)
	s.seen++
	b := want(t, s, mono) - s.units
	if b < 3*t.cost {
		s.low = -1 // they should last: no other renewal of this lease
		d := spend(t, s, limit, mono)
		s.Unlock()
		return d
	}
	s.low = -1 // no other renewal of this lease: it is under way
	s.Unlock()
	d := decide(ctx, t, key, limit, now, b)
	s.Lock()
	// A lease of another generation ends; what it spent goes to the new count
	// at once, before this request returns (gone.send below).
	gone := endIfReset(t, s, key, limit, &d)
	if d.Leased == 0 && s.key == key && s.limit == limit {
		// What Redis has left now, for the Remaining of the requests that
		// spend the units in hand.
		s.left = d.Remaining
	}
	if !d.Allowed {
		// Redis is full (the units in hand are part of what fills it) or
		// failed: the request is admitted from the lease after all, while
		// it lasts.
		current := int64(t.now().Sub(t.base))
		if s.units >= t.cost && current < s.expires && s.key == key && s.limit == limit {
			s.low = -1
			d = spend(t, s, limit, current)
		}
		s.Unlock()
		gone.send(t)
		return d
	}
	back := install(t, s, key, limit, mono, d)
	d.Remaining = held(s, key, limit, d)
	s.Unlock()
	gone.send(t)
	back.later(t)
	return d
}

// held returns the Remaining of the request d decided with a lease. It is
// what a per-request decision reports, and what the requests that spend the
// lease will: what Redis has left, plus the units this instance holds for
// the key in s (locked), the new ones and any it held before.
func held(s *slot, key string, limit int64, d ratelimit.Decision) int64 {
	if s.key == key && s.limit == limit && s.units > 0 {
		return s.left + s.units
	}
	return d.Remaining + d.Leased
}

// period starts a new period of demand in s when the current one is a
// sub-window old: the one before is kept when it just ended.
func period(t *Table, s *slot, mono int64) {
	if mono-s.period >= t.span {
		s.prev = 0
		if mono-s.period < 2*t.span {
			s.prev = s.seen
		}
		s.period, s.seen = mono, 0
	}
}

// coldMiss is miss for a key with no lease here to end or wait for that
// stays cold, the common request of many keys: its demand counted, its
// request decided by the guard's call. The rest goes on in miss, which
// finds this done already. It is apart from miss and small because a
// call's frame holds every local of the function called (see the package
// documentation). s is locked.
func coldMiss(ctx context.Context, t *Table, s *slot, key string, limit int64, now time.Time, mono int64) ratelimit.Decision {
	if s.stop == nil && s.units <= 0 && s.pending == nil && limit == t.limit {
		if s.key != key || s.limit != limit {
			s.keyed = keyed{key: key, limit: limit, period: mono}
		}
		if mono-s.period >= t.span {
			// Once a sub-window a key: a call, where inline its slots
			// would cost every request 9 allocations interpreted.
			period(t, s, mono)
		}
		if s.seen+1 < HotAfter && s.prev < HotAfter { // want's first test
			// miss's test, but for s.units < t.cost: units <= 0 here.
			if s.size > 0 && mono < s.expires {
				s.early = true
			}
			s.seen++
			s.Unlock()
			return redisstore.TakeKey(ctx, t.guard, t.keyCall, t.zone, key, now)
		}
	}
	return miss(ctx, t, s, key, limit, now, mono)
}

// miss is Take without a lease to spend; s is locked. It ends the lease
// s holds, if any, counts key's demand and decides the request through
// the guard, asking for a lease when key is hot. A request that finds
// another key's live lease in s is decided alone; one that finds a lease
// call for key in flight waits for its answer, once.
func miss(ctx context.Context, t *Table, s *slot, key string, limit int64, now time.Time, mono int64) ratelimit.Decision {
	if s.key != key || s.limit != limit {
		if s.pending != nil || s.units > 0 && mono < s.expires {
			s.Unlock()
			return decide(ctx, t, key, limit, now, 0)
		}
		takeBack(t, s).later(t)
		s.keyed = keyed{key: key, limit: limit, period: mono}
	}
	if s.size > 0 && s.units < t.cost && mono < s.expires {
		s.early = true // spent before it expired: ask for more
	}
	back := takeBack(t, s)
	period(t, s, mono)
	s.seen++
	b := want(t, s, mono)
	if b > 0 && s.pending != nil {
		ch := s.pending
		s.Unlock()
		back.later(t)
		return await(ctx, t, s, ch, key, limit, now)
	}
	var ch chan struct{}
	if b > 0 {
		ch = make(chan struct{})
		s.pending = ch
	}
	s.Unlock()
	back.later(t)
	d := decide(ctx, t, key, limit, now, b)
	if b > 0 {
		s.Lock()
		s.pending = nil
		close(ch)
		gone := endIfReset(t, s, key, limit, &d)
		back = install(t, s, key, limit, mono, d)
		d.Remaining = held(s, key, limit, d)
		s.Unlock()
		gone.send(t) // at once: the new count must know what was spent
		back.later(t)
	}
	return d
}

// await waits for the lease call ch stands for, then spends from what it
// granted, or decides the request alone.
func await(ctx context.Context, t *Table, s *slot, ch chan struct{}, key string, limit int64, now time.Time) ratelimit.Decision {
	select {
	case <-ch:
	case <-ctx.Done():
	}
	mono := int64(t.now().Sub(t.base)) // time passed while waiting
	s.Lock()
	if s.units >= t.cost && mono < s.expires && s.key == key && s.limit == limit {
		d := spend(t, s, limit, mono)
		s.Unlock()
		return d
	}
	s.Unlock()
	return decide(ctx, t, key, limit, now, 0)
}

// spend admits a request at mono from the lease in s (locked), which has
// the units: Take's hit path, which Take writes out to spare the frame,
// for the requests that come to it another way.
func spend(t *Table, s *slot, limit, mono int64) ratelimit.Decision {
	s.units -= t.cost
	s.saved++
	return ratelimit.Decision{Allowed: true, Limit: limit, Remaining: s.left + s.units, ResetAfter: time.Duration(s.resetAt - mono)}
}

// want returns the units to ask for on a request of the key s holds: none
// while the key is cold here or t is closed; else what the key's rate here
// asks for over what is left of the sub-window, but at most leaseHorizon
// of it (at least twice the last lease if that ran out early), at most
// t.max. The rate is the higher of the last period's and the current
// one's so far (timed over at least a tenth of a sub-window, at most
// leaseHorizon, so that a first burst does not read as a flood).
func want(t *Table, s *slot, mono int64) int64 {
	n := s.seen
	if s.prev > n {
		n = s.prev
	}
	if n < HotAfter || t.max == 0 || atomic.LoadInt32(&t.closed) != 0 {
		return 0
	}
	elapsed, least := mono-s.period, t.span/10
	if least > int64(leaseHorizon) {
		least = int64(leaseHorizon)
	}
	if elapsed < least {
		elapsed = least
	}
	rate := float64(s.seen) / float64(elapsed)
	if r := float64(s.prev) / float64(t.span); r > rate {
		rate = r
	}
	rest := t.span
	if s.edge != 0 {
		// A lease lasts to the end of the sub-window; the last lease's
		// expiry marks where the server's sub-windows end.
		rest = t.span - (mono-s.edge)%t.span
		if mono < s.edge {
			rest = s.edge - mono
		}
	}
	if rest > int64(leaseHorizon) {
		rest = int64(leaseHorizon)
	}
	b := (int64(rate*float64(rest)) + 1) * t.cost
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
func decide(ctx context.Context, t *Table, key string, limit int64, now time.Time, b int64) ratelimit.Decision {
	if b == 0 && limit == t.limit {
		return redisstore.TakeKey(ctx, t.guard, t.keyCall, t.zone, key, now)
	}
	it := []ratelimit.Item{{Zone: t.zone, Key: key, Lease: b}}
	if limit != t.limit {
		it[0].Limit = limit
	}
	if b > 0 {
		// A lease call outlives the client that made it (the client's
		// own timeouts still bound it): Redis may count the units before
		// a client that leaves could cancel the reply that names them,
		// and units nobody holds would be lost to the limit until they
		// leave the window, as many as a lease at each reset.
		ctx = context.WithoutCancel(ctx)
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
	current := int64(t.now().Sub(t.base))
	if s.key != key || s.limit != limit || expires <= current || atomic.LoadInt32(&t.closed) != 0 {
		return giveBack{item: ratelimit.Item{Zone: t.zone, Key: key, Limit: limit}, grant: d,
			use: ratelimit.LeaseUse{Granted: d.Leased, Unspent: d.Leased}}
	}
	var back giveBack
	// A grant in the same sub-window and generation adds to the slot's account.
	// So a reset's give-back returns every unit spent before the last
	// reply that found the key in that generation, not only the last lease's.
	same := s.granted > 0 && generationOf(&s.grant) == generationOf(&d) && leasedAt(&s.grant)/t.span == leasedAt(&d)/t.span
	if s.units > 0 {
		if current < s.expires && same {
			// A renewal counted in the sub-window of the lease in hand:
			// one lease. Each expiry is no later than that sub-window's
			// end, so the later one is too.
			d.Leased += s.units
			if s.expires > expires {
				expires = s.expires
			}
		} else {
			back = takeBack(t, s) // its sub-window is over
			same = false
		}
	}
	if s.stop != nil {
		s.stop()
	}
	granted := d.Leased
	if same {
		granted = s.granted + d.Leased - s.units
	} else {
		s.confirmed = 0
	}
	s.units, s.expires, s.grant, s.granted, s.left = d.Leased, expires, d, granted, d.Remaining
	s.resetAt = mono + int64(d.ResetAfter)
	s.size, s.early, s.edge, s.low = d.Leased, false, expires, d.Leased/4
	s.timers++
	timer := s.timers
	s.stop = t.after(time.Duration(expires-current), func() { expire(t, s, timer) })
	return back
}
