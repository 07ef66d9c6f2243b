package guard

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Refund implements Refunder. A count that FailLocal took in memory goes
// back there; a count in the remote store goes back there, unless the
// breaker is open (Redis is down: the count stays, the safe side). The
// error is always nil: a failed refund is logged and trips the breaker as
// a failed take does, and the count stays. A refunded key's cached denial
// goes, since its count fell; other instances keep theirs until it
// expires.
func (g *Guard) Refund(ctx context.Context, items []ratelimit.Item, out []ratelimit.Decision) error {
	ratelimit.Memory{}.Refund(ctx, items, out)
	remote := false
	for i := range items {
		if items[i].Refundable && out[i].Receipt.Remote {
			remote = true
			if g.denials != nil {
				g.denials.forget(&items[i])
			}
		}
	}
	rf, ok := g.remote.(ratelimit.Refunder)
	if !remote || !ok || g.breaker != nil && g.breaker.open() {
		return nil
	}
	givenBack(ctx, g, rf.Refund(ctx, items, out))
	return nil
}

// givenBack accounts for the error err of a call that gave counts back
// (a refund, a lease's unspent units): the count stays, and a failure is
// logged and trips the breaker as a failed take does, unless the call was
// never sent (our own backlog) or its caller left.
func givenBack(ctx context.Context, g *Guard, err error) {
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

// GiveBack returns the unspent units of a lease to the store. d is a
// decision Take returned for an Item with Lease set, and use tells what
// became of the units the store counted for it. They come off that
// sub-window, if the key still holds them there in d's generation; with the
// breaker open they stay counted (the safe side). If an operator reset the
// key since, they come off the fresh count that kept them. If the store
// lost the key (another generation, see ratelimit.Receipt), the units spent
// since the generation was last confirmed are counted in the new generation
// instead, if their sub-window still counts at now, so that a loss adds to
// a fresh budget as little of what a lease spent after it as can be known.
// A failure is logged and trips the breaker as a failed take does. The
// key's cached denial goes, since its count may have fallen.
func (g *Guard) GiveBack(ctx context.Context, now time.Time, it ratelimit.Item, d ratelimit.Decision, use ratelimit.LeaseUse) {
	gb, ok := g.remote.(giveBacker)
	if use.Unspent < 0 || use.Granted <= 0 || !ok || !d.Receipt.Remote {
		return
	}
	if g.denials != nil {
		g.denials.forget(&it)
	}
	if g.breaker != nil && g.breaker.open() {
		return
	}
	givenBack(ctx, g, gb.GiveBack(ctx, now, it, d, use))
}

// giveBacker is a store that leases units and takes the unspent ones back
// (redisstore.Store).
type giveBacker interface {
	GiveBack(ctx context.Context, now time.Time, it ratelimit.Item, d ratelimit.Decision, use ratelimit.LeaseUse) error
}
