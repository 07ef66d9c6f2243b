package ratelimit

import (
	"bytes"
	"testing"
	"time"
)

// TestSnapshotKeyClaimedMidway: a restored key claimed while a snapshot
// runs, after the snapshot read what the restore left and before it
// copied the key's shard, is in the snapshot with its count, once (it is
// there twice, from the restore and from its shard, and the next restore
// merges the two), whichever way the snapshot is taken.
func TestSnapshotKeyClaimedMidway(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	for _, a := range []Algorithm{Sliding, Log} {
		rule := Rule{Window: time.Minute, Limit: 5, Algorithm: a}
		for _, way := range []string{"Snapshot", "takeSnapshot"} {
			t.Run(a.String()+"/"+way, func(t *testing.T) {
				z := persistZone(t, "z", rule, 0)
				TakeAt(z, "a", at)
				TakeAt(z, "a", at.Add(time.Millisecond))
				TakeAt(z, "b", at)
				sn, _ := z.takeSnapshot(at)
				z2 := persistZone(t, "z", rule, 0)
				if _, err := z2.restore(roundTrip(t, sn), at); err != nil {
					t.Fatal(err)
				}
				afterUnclaimed = func() { TakeAt(z2, "a", at.Add(2*time.Millisecond)) }
				defer func() { afterUnclaimed = nil }()
				var b bytes.Buffer
				if way == "Snapshot" {
					if _, err := z2.Snapshot(&b, at); err != nil {
						t.Fatal(err)
					}
				} else {
					sn2, err := z2.takeSnapshot(at)
					if err != nil {
						t.Fatal(err)
					}
					data, err := sn2.marshal()
					if err != nil {
						t.Fatal(err)
					}
					b.Write(data)
				}
				afterUnclaimed = nil
				if st := z2.Stats(); st.Pending != 1 {
					t.Errorf("%d restored keys pending, want 1 (b)", st.Pending)
				}
				z3 := persistZone(t, "z", rule, 0)
				if _, err := z3.Restore(&b, at); err != nil {
					t.Fatal(err)
				}
				later := at.Add(time.Second).UnixNano()
				if d := TakeAt(z3, "a", time.Unix(0, later)); d.Remaining != 1 {
					t.Errorf("a after the second restart: %+v, want remaining 1 (3 counted before: lost, or counted twice)", d)
				}
				if d := TakeAt(z3, "b", time.Unix(0, later)); d.Remaining != 3 {
					t.Errorf("b after the second restart: %+v, want remaining 3", d)
				}
			})
		}
	}
}
