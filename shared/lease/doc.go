// Package lease lets one proxy admit a hot key's requests without a Redis
// call each, and never more than per-request decisions would admit.
//
// When a key is hot on this instance, the call that decides one of its
// requests also asks Redis for a lease of B units (ratelimit.Item.Lease).
// The script counts the units it grants at once, in the request's
// sub-window, atomically with the request, so that every other instance
// sees them counted. This instance then admits the key's next requests
// from those units, locally, but only while that sub-window is the newest
// on Redis's clock: from the moment the call was sent, for the time the
// reply said was left of the sub-window (ratelimit.Decision.LeaseFor),
// timed by this process's monotonic clock, which no wall-clock step moves.
// A unit admitted so was counted before it was admitted and in the
// sub-window it is admitted in, so every local admission is one that a
// per-request decision at that moment would have made too: the window's
// count, with every lease's units in it, is never above the limit.
//
// When a quarter of a lease is left, one request renews it (its call asks
// for more) while the others spend the rest, so that no request waits on
// another's call. What a lease does not spend is given back when it ends,
// in one call, from the sub-window it was counted in (if it still counts).
// Until then other instances see those units as used: leases can only make
// the fleet admit less, never more. B follows this instance's rate for the
// key over what is left of the sub-window, over leaseHorizon at most
// (doubling while leases run out early), up to Options.MaxUnits, and Redis
// grants at most half of what the window has left after the request, so
// near the limit leases shrink to nothing and every request is decided by
// Redis, exactly as without leases. A key this instance sees fewer than
// HotAfter times per sub-window never leases.
//
// Redis down mid-lease: the units in hand are spent until they expire,
// then the guard's failure policy decides, as without leases.
//
// Take is shaped for Traefik's yaegi interpreter, which runs it on every
// request with leases on: a function rather than a method, since a method
// call on an interpreted type costs more than a function call (Take as a
// method: 21 to 34 interpreted allocations a request more in
// scripts/yaegitest, BenchmarkRedisLeaseInterpreted/huge-lease-auto), and
// its common cases written out,
// since every call allocates a slot for each local and temporary of the
// function called, branches taken or not (coldMiss stays apart from miss
// for that: BenchmarkRedisLayersInterpreted, 1,000 keys).
//
// Files:
//
//   - table.go: the Table of one zone's leases, its options, stats,
//     inspection, Close and Forget (an operator's reset).
//   - take.go: Take, a request decided from a lease or through the guard,
//     and the renewal, sizing and install of leases.
//   - giveback.go: what a lease gives back when it ends, and a lease ended
//     because its key was reset or lost (endIfReset).
package lease
