package ratelimit

import "time"

// Decision is the outcome of one rule for one request.
type Decision struct {
	// Allowed reports whether the request may pass this rule.
	Allowed bool
	// Limit is the rule's N.
	Limit int64
	// Remaining is how many more requests of cost 1 would pass right now:
	// N minus the count after this request, rounded down, at least 0.
	Remaining int64
	// RetryAfter is, for a denied request, the earliest delay after which a
	// request of the same cost would pass if nothing else arrived. It is
	// zero for an allowed request.
	RetryAfter time.Duration
	// ResetAfter is the delay until the window holds no counted request.
	ResetAfter time.Duration
	// Leased is how many units the store counted beyond this request for
	// an Item with Lease set; Remaining is then net of them. LeaseFor is
	// how long they may be spent, from the moment the call was sent: until
	// the sub-window they were counted in ends on the store's clock.
	Leased   int64
	LeaseFor time.Duration

	// receipt says where an admitted Refundable item was counted (see
	// Refund); the zero receipt holds nothing to give back.
	receipt receipt
}

// LeasedAt is the store's time, in microseconds, at which the units of a
// lease (Leased) were counted, which names the sub-window they count in;
// 0 when the decision leased nothing.
func (d *Decision) LeasedAt() int64 {
	if d.Leased <= 0 {
		return 0
	}
	return d.receipt.at
}

// Life names the key's count that a remote store decided d in: Redis's
// time when the key was created, or 0 when unknown (in memory, for a log
// rule, or when the store failed). A key that an operator reset, or that
// Redis lost, is created anew with another life: units leased in the old
// one are no longer counted, so their holder stops spending them.
func (d *Decision) Life() int64 {
	if !d.receipt.remote {
		return 0
	}
	return int64(d.receipt.life)
}

// receipt is where a store counted a request: the time it counted it at,
// after its clock clamps, in nanoseconds in memory or microseconds in
// Redis, which fixes the sub-window (or the log entry) a refund takes the
// count back from.
type receipt struct {
	at int64 // 0: not counted
	// life names the key's count the request went into: a slot's life in
	// memory, the key's birth time in Redis. A refund into another life
	// (the key was reset, evicted or lost since) gives nothing back.
	life   uint32
	remote bool // counted by a remote store rather than in memory
}

// Tightest returns the index of the decision that should speak for a
// request checked against several rules: among denials the one that lasts
// longest, otherwise the one with the fewest requests remaining. It returns
// -1 for an empty slice.
func Tightest(ds []Decision) int {
	best := -1
	for i := range ds {
		if best < 0 || tighter(&ds[i], &ds[best]) {
			best = i
		}
	}
	return best
}

func tighter(a, b *Decision) bool {
	if a.Allowed != b.Allowed {
		return !a.Allowed
	}
	if !a.Allowed {
		return a.RetryAfter > b.RetryAfter
	}
	return a.Remaining < b.Remaining
}
