package ratelimit

import (
	"bytes"
	"testing"
	"time"
)

// TestSnapshotKeyClaimedMidway: a restored key claimed while a snapshot
// runs, after the snapshot read what the restore left and before it
// copied the key's shard, is in the snapshot with its count, whichever
// way the snapshot is taken.
func TestSnapshotKeyClaimedMidway(t *testing.T) {
	rule := Rule{Window: time.Minute, Limit: 3}
	at := time.Unix(1_800_000_000, 0)
	for _, way := range []string{"Snapshot", "takeSnapshot"} {
		t.Run(way, func(t *testing.T) {
			z := persistZone(t, "z", rule, 0)
			for i := 0; i < 3; i++ {
				TakeAt(z, "a", at.UnixNano())
			}
			TakeAt(z, "b", at.UnixNano())
			sn, _ := z.takeSnapshot(at)
			z2 := persistZone(t, "z", rule, 0)
			if _, err := z2.restore(roundTrip(t, sn), at); err != nil {
				t.Fatal(err)
			}
			afterUnclaimed = func() {
				if d := TakeAt(z2, "a", at.UnixNano()); d.Allowed {
					t.Errorf("a admitted after the restart: %+v", d)
				}
			}
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
			if d := TakeAt(z3, "a", at.Add(time.Second).UnixNano()); d.Allowed {
				t.Errorf("a admitted after the second restart: its count was lost: %+v", d)
			}
			if d := TakeAt(z3, "b", at.Add(time.Second).UnixNano()); d.Remaining != 1 {
				t.Errorf("b after the second restart: %+v, want remaining 1", d)
			}
		})
	}
}
