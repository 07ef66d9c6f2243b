package guard

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Down reports whether the breaker is open: the store is not being asked.
// Calls of the store beside Take (in-flight slots) ask it first.
func (g *Guard) Down() bool { return g.breaker != nil && g.breaker.open() }

// Failed accounts a failed call of the store beside Take (in-flight
// slots) as Take accounts its own: counted, the breaker tripped, the error
// logged at the guard's rate. The caller then decides by Policy. A call
// the client left, or one never sent for the host's backlog, says nothing
// of the store and trips nothing.
func (g *Guard) Failed(ctx context.Context, err error, now time.Time) {
	atomic.AddUint64(&g.fallbacks, 1)
	if ctx.Err() != nil {
		return
	}
	if errors.Is(err, ErrOverloaded) {
		atomic.AddUint64(&g.overloaded, 1)
		g.busyErrs.report(err, now)
		return
	}
	atomic.AddUint64(&g.failures, 1)
	if g.breaker != nil {
		g.breaker.trip()
	}
	g.errs.report(err, now)
}

// Policy returns the failure policy the guard applies.
func (g *Guard) Policy() FailurePolicy { return g.policy }

// TakeSlot implements ratelimit.SlotTaker: Take, with slot taken in the
// same call when the remote store takes slots. A denial of the cache, the
// breaker's policy or a failure leaves slot not asked, for the caller.
func (g *Guard) TakeSlot(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision, slot *ratelimit.Slot) (bool, error) {
	st, _ := g.remote.(ratelimit.SlotTaker)
	if slot == nil || st == nil {
		return guardTake(ctx, g, now, items, out), nil
	}
	if g.denials != nil && atomic.LoadInt64(&g.denials.n) != 0 && checkCached(g.denials, now, items, out) {
		atomic.AddUint64(&g.cacheHits, 1)
		return false, nil
	}
	if g.breaker != nil && g.breaker.open() {
		atomic.AddUint64(&g.fallbacks, 1)
		return g.policy.decide(now, items, out), nil
	}
	allowed, err := st.TakeSlot(ctx, now, items, out, slot)
	return Answered(ctx, g, now, items, out, allowed, err), nil
}
