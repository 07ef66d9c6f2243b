package lease

import (
	"context"
	"sync/atomic"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// giveBack is the unspent part of a lease that ended, to be given back
// outside the slot's lock.
type giveBack struct {
	item  ratelimit.Item
	grant ratelimit.Decision
	use   ratelimit.LeaseUse
}

// takeBack ends the lease s holds, if any, and returns what it left; s
// is locked.
func takeBack(t *Table, s *slot) giveBack {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
	if s.units <= 0 {
		return giveBack{}
	}
	b := ended(t, s)
	s.units, s.granted, s.confirmed = 0, 0, 0
	s.grant = ratelimit.Decision{}
	return b
}

// ended returns what the lease s holds would give back if it ended now;
// s is locked.
func ended(t *Table, s *slot) giveBack {
	b := giveBack{item: ratelimit.Item{Zone: t.zone, Key: s.key, Limit: s.limit}, grant: s.grant,
		use: ratelimit.LeaseUse{Granted: s.granted, Unspent: s.units, Confirmed: s.confirmed}}
	if s.limit == t.limit {
		b.item.Limit = 0
	}
	return b
}

// endIfReset ends the lease s (locked) holds on key if the key was reset.
// That is when d, Redis's reply to a lease call on key, names another
// generation of the key than the lease was granted in (see generationOf):
// an operator reset the key or Redis lost it, so the units in hand are
// counted nowhere and must not be spent. It returns the lease, to be given
// back: the script then counts what the lease spent in the key's new
// generation, the units spent after the reset among them. A lease spent to
// the last unit is returned too, for that count.
func endIfReset(t *Table, s *slot, key string, limit int64, d *ratelimit.Decision) giveBack {
	generation := generationOf(&s.grant)
	if generation == 0 || generationOf(d) == 0 || s.key != key || s.limit != limit {
		return giveBack{}
	}
	if generationOf(d) == generation {
		// Still the same count: what was spent so far came before any
		// reset.
		s.confirmed = s.granted - s.units
		return giveBack{}
	}
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
	b := ended(t, s)
	s.units, s.granted, s.confirmed, s.low = 0, 0, 0, -1
	s.grant = ratelimit.Decision{}
	atomic.AddUint64(&t.endedByReset, 1)
	return b
}

// send gives b's units back through t's guard, in a call of its own
// bounded by giveBackTimeout; a failure leaves them counted, the safe
// side.
func (b giveBack) send(t *Table) {
	if b.use.Granted <= 0 {
		return
	}
	atomic.AddUint64(&t.returned, uint64(b.use.Unspent))
	ctx, cancel := context.WithTimeout(context.Background(), giveBackTimeout)
	t.guard.GiveBack(ctx, t.now(), b.item, b.grant, b.use)
	cancel()
}

// later sends b in a goroutine of its own: on a request's path, giving
// back must not add a call to the request's wait.
func (b giveBack) later(t *Table) {
	if b.use.Granted > 0 {
		b.spawn(t)
	}
}

// spawn is later's goroutine, apart so that compiled code moves b to the
// heap only when there is something to give back, not on every request.
func (b giveBack) spawn(t *Table) {
	t.async(func() { b.send(t) })
}

// expire ends the lease in s when its time is up, unless a later lease set
// another timer (see slot.timers), giving back what it left: a key that
// went quiet does not keep its units from the other instances until they
// leave the window.
func expire(t *Table, s *slot, timer uint64) {
	s.Lock()
	if s.timers != timer {
		s.Unlock()
		return
	}
	s.stop = nil // this timer fired
	back := takeBack(t, s)
	s.Unlock()
	back.send(t)
}

// generationOf names the key's count that Redis decided d in (see
// ratelimit.Receipt), or 0 when unknown: a decision in memory (the local
// failure policy) or of a failed store.
func generationOf(d *ratelimit.Decision) int64 {
	if !d.Receipt.Remote {
		return 0
	}
	return int64(d.Receipt.Generation)
}

// leasedAt is the store's time, in Unix nanoseconds, at which the units d
// leased were counted, which names their sub-window; 0 when d leased
// nothing.
func leasedAt(d *ratelimit.Decision) int64 {
	if d.Leased <= 0 {
		return 0
	}
	return d.Receipt.At
}
