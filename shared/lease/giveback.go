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
	units int64
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
	b := giveBack{item: ratelimit.Item{Zone: t.zone, Key: s.key, Limit: s.limit}, grant: s.grant, units: s.units}
	if s.limit == t.limit {
		b.item.Limit = 0
	}
	s.units = 0
	s.grant = ratelimit.Decision{}
	return b
}

// send gives b's units back through t's guard, in a call of its own
// bounded by giveBackTimeout; a failure leaves them counted, the safe
// side.
func (b giveBack) send(t *Table) {
	if b.units <= 0 {
		return
	}
	atomic.AddUint64(&t.returned, uint64(b.units))
	ctx, cancel := context.WithTimeout(context.Background(), giveBackTimeout)
	t.guard.GiveBack(ctx, b.item, b.grant, b.units)
	cancel()
}

// later sends b in a goroutine of its own: on a request's path, giving
// back must not add a call to the request's wait.
func (b giveBack) later(t *Table) {
	if b.units > 0 {
		go b.send(t)
	}
}

// expire ends the lease of generation gen in s when its time is up,
// giving back what it left: a key that went quiet does not keep its
// units from the other instances until they leave the window.
func expire(t *Table, s *slot, gen uint64) {
	s.mu.Lock()
	if s.gen != gen {
		s.mu.Unlock()
		return
	}
	s.stop = nil // this timer fired
	back := takeBack(t, s)
	s.mu.Unlock()
	back.send(t)
}
