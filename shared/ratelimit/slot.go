package ratelimit

import (
	"context"
	"time"
)

// Slot asks a remote store to take an in-flight slot for a request of one
// Item in the same call as its decision, before it counts the request: a
// request refused a slot is not counted, and one the rate refuses takes
// no slot (see SlotTaker). The shared/inflight package makes it and keeps
// the slot once taken.
type Slot struct {
	// Set names the key's slots in the store; N is the most slots held at
	// once; TTL how long a slot stays taken without its holder's renewal;
	// Member the slot's own name.
	Set    string
	N      int64
	TTL    time.Duration
	Member string

	// State is the store's answer; Held the slots held with this one
	// once taken, or those held when the set was full.
	State SlotState
	Held  int64
}

// SlotState is what a store did with a Slot.
type SlotState uint8

const (
	// SlotNotAsked: the store decided the request without taking the
	// slot (a cached denial, a failure policy, a refusal, a request it
	// could not count); the slot, if the request still needs one, is
	// the caller's to take.
	SlotNotAsked SlotState = iota
	// SlotTaken: the request was admitted and holds the slot.
	SlotTaken
	// SlotFull: the set was full; the request was neither decided nor
	// counted, and its Decision is a refusal of no rate.
	SlotFull
)

// SlotTaker is a store that takes a Slot with a decision: Take of items,
// one Item when slot is set, that answers in *slot. A nil slot is Take.
type SlotTaker interface {
	TakeSlot(ctx context.Context, now time.Time, items []Item, out []Decision, slot *Slot) (bool, error)
}
