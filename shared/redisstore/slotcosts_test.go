package redisstore

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// slotsHeld is how many slots each set of slotCostModes holds besides
// the ones a call takes or releases: a key with a few requests running.
const slotsHeld = 4

// slotCostModes returns the modes of the slots script as TestScriptCosts
// measures them, each n calls of slots: take admitted and take refused,
// release of one member and of a batch of 16 (one key's waiting releases,
// as the holder of shared/inflight sends them), and renew of 3 members.
// Each call finds its set as the one before it did: a call that changes
// its set has a set of its own, filled in setup.
func slotCostModes(t *testing.T, slots *Slots, n int) []costMode {
	ctx := context.Background()
	const ttl = time.Hour
	take := func(set string, limit int64) string {
		t.Helper()
		m, _, err := slots.Take(ctx, set, limit, ttl)
		if err != nil || m == "" {
			t.Fatalf("take a slot of %s: %q, %v", set, m, err)
		}
		return m
	}
	// fill takes k slots of each of n sets named name-i and returns their
	// members, set by set.
	fill := func(name string, k int) (sets []string, members [][]string) {
		sets, members = make([]string, n), make([][]string, n)
		for i := range sets {
			sets[i] = slots.Key("slots", name+"-"+strconv.Itoa(i))
			for j := 0; j < k; j++ {
				members[i] = append(members[i], take(sets[i], 1<<30))
			}
		}
		return sets, members
	}
	// allHold reports whether each of sets holds slotsHeld slots: a
	// release's reply does not say what it freed.
	allHold := func(sets []string) bool {
		for _, set := range sets {
			if held, err := slots.Held(ctx, set); err != nil || held != slotsHeld {
				return false
			}
		}
		return true
	}
	var takeSets, oneSets, batchSets []string
	var oneMembers, batchMembers [][]string
	full := slots.Key("slots", "full")
	renewSet := slots.Key("slots", "renew")
	var renewMembers []string
	return []costMode{
		{"take admitted, set holding " + strconv.Itoa(slotsHeld), func() {
			takeSets, _ = fill("take", slotsHeld)
		}, func(i int) bool {
			m, held, err := slots.Take(ctx, takeSets[i], slotsHeld+1, ttl)
			return err == nil && m != "" && held == slotsHeld+1
		}, nil},
		{"take refused, set full at " + strconv.Itoa(slotsHeld), func() {
			for i := 0; i < slotsHeld; i++ {
				take(full, slotsHeld)
			}
		}, func(int) bool {
			m, held, err := slots.Take(ctx, full, slotsHeld, ttl)
			return err == nil && m == "" && held == slotsHeld
		}, nil},
		{"release of one member, set holding " + strconv.Itoa(slotsHeld+1), func() {
			oneSets, oneMembers = fill("one", slotsHeld+1)
		}, func(i int) bool {
			return slots.Release(ctx, oneSets[i], oneMembers[i][0]) == nil
		}, func() bool { return allHold(oneSets) }},
		{"release of 16 members in one call, set holding " + strconv.Itoa(slotsHeld+16), func() {
			batchSets, batchMembers = fill("batch", slotsHeld+16)
		}, func(i int) bool {
			return slots.Release(ctx, batchSets[i], batchMembers[i][:16]...) == nil
		}, func() bool { return allHold(batchSets) }},
		{"renew of 3 members, set holding " + strconv.Itoa(slotsHeld), func() {
			for i := 0; i < slotsHeld; i++ {
				renewMembers = append(renewMembers, take(renewSet, 1<<30))
			}
		}, func(int) bool {
			alive, err := slots.Renew(ctx, renewSet, ttl, renewMembers[:3])
			return err == nil && len(alive) == 3 && alive[0] && alive[1] && alive[2]
		}, nil},
	}
}
