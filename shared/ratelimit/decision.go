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

	// Receipt says where the store counted an admitted Refundable item,
	// or a lease's units: what a refund or a give-back names to take the
	// count back from the right place. The zero Receipt holds nothing.
	Receipt Receipt
}

// Receipt is where a store counted a request.
//
// At fixes the sub-window (or the log entry) a refund takes the count back
// from: the time the store counted the request at, after its clock clamps,
// in Unix nanoseconds on that store's clock; 0 when nothing was counted.
// Generation names the key's count the request went into: a slot's
// generation in memory, the key's birth time on a remote store. A key that
// was reset, evicted or lost since is another generation, and a refund into
// it gives nothing back. Remote reports a remote store's receipt rather
// than one of the in-memory zones.
type Receipt struct {
	At         int64
	Generation uint64
	Remote     bool
}

// LeaseUse is what became of the units of a lease: Granted were granted
// in its sub-window, Unspent are left, and Confirmed were spent before a
// reply of the store last found the key in the lease's generation (so before
// any reset of it).
type LeaseUse struct {
	Granted, Unspent, Confirmed int64
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
