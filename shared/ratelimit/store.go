package ratelimit

import (
	"context"
	"time"
)

// Item is one rule to check for a request: a zone and the request's key in
// that zone.
type Item struct {
	Zone *Zone
	Key  string
	// Refundable makes the item a reservation: it is decided and counted
	// as any other, and its decision records where it was counted, so
	// that the host can give the count back with Refund once the
	// response shows it must not count (count_status). Counting first is
	// what bounds a client's requests in flight: what is counted or in
	// flight never exceeds the limit, whatever the concurrency.
	Refundable bool
	// Limit, when positive, is the key's own N for this request instead of
	// the rule's: an override or a tier. The key's count does not depend
	// on it, so a key that changes tier keeps its count. It must be at
	// least the rule's cost (and at most MaxLogLimit for Log, MaxLimit
	// otherwise); hosts check that at config load or per request
	// (ValidLimit).
	Limit int64
	// Lease, when positive, asks a remote store that supports leases to
	// count up to Lease more units for the key in the same
	// call, if it admits the request: units that the caller may then admit
	// locally, without a call, until the sub-window they were counted in
	// ends (see Decision.Leased and the lease package). Stores without
	// leases, and log rules, grant none.
	Lease int64
}

// LimitOf returns the N that applies to it: its own Limit when positive,
// else its zone's rule's. A function, not a method: interpreted, a method
// call costs more (see the package documentation).
func LimitOf(it *Item) int64 {
	if it.Limit > 0 {
		return it.Limit
	}
	return it.Zone.rule.Limit
}

// Store takes the decisions for one request. Every item is checked, and the
// request is counted in all of them only if all allow it, atomically with
// respect to other requests. out must have len(items) elements; it receives
// one decision per item. The result reports whether all items allowed.
//
// The in-memory store never fails; a remote store reports its failures so
// the caller can apply its failure policy.
type Store interface {
	Take(ctx context.Context, now time.Time, items []Item, out []Decision) (bool, error)
}

// Memory is the in-memory Store: each zone keeps its own keys.
type Memory struct{}

// Take implements Store.
func (Memory) Take(_ context.Context, now time.Time, items []Item, out []Decision) (bool, error) {
	return TakeAll(now, items, out), nil
}

// maxStackItems is how many items TakeAll handles without allocating.
const maxStackItems = 8

// TakeAll decides items together in memory and counts the request in every
// zone only if all allow it; a Refundable item's decision then holds its
// receipt. The shards involved are locked in one global order (zone number,
// then shard), so concurrent requests over the same zones cannot deadlock
// or slip between another request's check and count.
func TakeAll(now time.Time, items []Item, out []Decision) bool {
	if len(items) == 1 && !items[0].Refundable && items[0].Zone.ban == 0 {
		if it := &items[0]; it.Limit > 0 && it.Limit != it.Zone.rule.Limit {
			out[0] = TakeLimitAt(it.Zone, it.Key, now, it.Limit)
		} else {
			out[0] = TakeAt(it.Zone, it.Key, now)
		}
		return out[0].Allowed
	}
	t := now.UnixNano()
	var hashBuf, rankBuf [maxStackItems]uint64
	var orderBuf [maxStackItems]int
	hashes, rank, order := hashBuf[:0], rankBuf[:0], orderBuf[:0]
	if len(items) > maxStackItems {
		hashes = make([]uint64, 0, len(items))
		rank, order = make([]uint64, 0, len(items)), make([]int, 0, len(items))
	}
	for i := range items {
		z := items[i].Zone
		h := z.hash(items[i].Key)
		hashes = append(hashes, h)
		rank = append(rank, z.number<<6|h&z.mask) // at most 64 shards
		order = append(order, i)
	}
	// Insertion sort: a request has a handful of items.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && rank[order[j]] < rank[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	for i, j := range order {
		if i == 0 || rank[j] != rank[order[i-1]] {
			items[j].Zone.shards[hashes[j]&items[j].Zone.mask].Lock()
		}
	}
	allowed := true
	for i := range items {
		z := items[i].Zone
		s := &z.shards[hashes[i]&z.mask]
		if z.ban > 0 && banned(z, s, items[i].Key, hashes[i], t, LimitOf(&items[i]), &out[i]) {
			allowed = false
			continue
		}
		out[i] = take(z, s, items[i].Key, hashes[i], t, LimitOf(&items[i]), false)
		if z.ban > 0 && !out[i].Allowed {
			startBan(z, s, items[i].Key, hashes[i], t, &out[i])
		}
		allowed = allowed && out[i].Allowed
	}
	if allowed {
		for i := range items {
			z := items[i].Zone
			s := &z.shards[hashes[i]&z.mask]
			take(z, s, items[i].Key, hashes[i], t, LimitOf(&items[i]), true)
			if items[i].Refundable {
				out[i].Receipt = countedAt(z, s, hashes[i])
			}
		}
	}
	for i, j := range order {
		if i == 0 || rank[j] != rank[order[i-1]] {
			items[j].Zone.shards[hashes[j]&items[j].Zone.mask].Unlock()
		}
	}
	return allowed
}
