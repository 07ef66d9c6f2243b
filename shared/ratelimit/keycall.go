package ratelimit

import "context"

// KeyCall is a remote store's call for one zone, encoded once for every
// key: it decides one request on a key at the zone's rule's limit. A host
// makes it on its common request without a call into the store's own
// code, which interpreted would cost as much as the call itself.
type KeyCall struct {
	// Run sends the call on key: Head, then Prefix, key and Suffix, then
	// Tail. A reply of four integers is the decision: 1 if the request
	// is admitted, the remaining count, and RetryAfter and ResetAfter in
	// microseconds. Any other reply, or an error, goes to Rest.
	Run                        func(ctx context.Context, head, key, tail string) ([]int64, error)
	Head, Prefix, Suffix, Tail string
	// MaxKey is the longest key Run takes as is. Rest decides a longer
	// key, and one that starts with '#'.
	MaxKey int
	// Limit is the zone's rule's limit.
	Limit int64
	// Rest decides the request on key as the store's Take of one item
	// would: from Run's reply res and error err, or, when Run was not
	// called (both nil), by a call of its own.
	Rest func(ctx context.Context, key string, res []int64, err error) (Decision, error)
}
