package ratelimit

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
	"time"
)

// banZone returns a persisted zone of banRule with a ban of an hour.
func banZone(t testing.TB, ban time.Duration) *Zone {
	t.Helper()
	z, err := NewZone("login", banRule, Options{SweepInterval: -1, Persist: true, Ban: ban})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}

// banAt bans key in z at at: limit 3, so the 4th request.
func banAt(z *Zone, key string, at time.Time) {
	for i := 0; i < 4; i++ {
		TakeBanAt(z, key, at, 0)
	}
}

// restart snapshots z at at and restores the file into a fresh zone of
// ban at then.
func restart(t *testing.T, z *Zone, at, then time.Time, ban time.Duration) (*Zone, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := z.Snapshot(&buf, at); err != nil {
		t.Fatal(err)
	}
	next := banZone(t, ban)
	if _, err := next.Restore(bytes.NewReader(buf.Bytes()), then); err != nil {
		t.Fatal(err)
	}
	return next, buf.Bytes()
}

// TestBanSurvivesRestart: a ban is in the snapshot with its end in wall-
// clock time, and the restored zone refuses the key until then, though
// its window is long over; Inspect sees a restored ban before the key
// comes back, and a snapshot of the restored zone keeps it; an ended ban
// is dropped.
func TestBanSurvivesRestart(t *testing.T) {
	z := banZone(t, time.Hour)
	banAt(z, "mallory", epoch)
	banAt(z, "trudy", epoch.Add(-50*time.Minute)) // ends 10 minutes after epoch
	next, file := restart(t, z, epoch.Add(time.Minute), epoch.Add(20*time.Minute), time.Hour)
	if file[len(snapshotMagic)] != snapshotVersion {
		t.Fatalf("a ban zone's snapshot is version %d, want %d", file[len(snapshotMagic)], snapshotVersion)
	}
	later := epoch.Add(20 * time.Minute)
	if st := next.Inspect("mallory", later); st.BannedFor != 40*time.Minute {
		t.Fatalf("Inspect of a restored ban: %+v, want banned for 40m", st)
	}
	again, _ := restart(t, next, later, later, time.Hour) // unclaimed, snapshot again
	if d := TakeBanAt(again, "mallory", later, 0); d.Allowed || d.RetryAfter != 40*time.Minute {
		t.Fatalf("after two restarts: %+v, want banned 40m more", d)
	}
	if d := TakeBanAt(next, "mallory", later, 0); d.Allowed || d.RetryAfter != 40*time.Minute {
		t.Fatalf("after the restart: %+v, want banned 40m more", d)
	}
	if d := TakeBanAt(next, "trudy", later, 0); !d.Allowed {
		t.Fatalf("a ban that ended before the restore: %+v, want served", d)
	}
	if d := TakeBanAt(next, "mallory", epoch.Add(time.Hour), 0); !d.Allowed {
		t.Fatalf("at the ban's end: %+v, want served", d)
	}
}

// TestBanRestoredForget: a reset lifts a restored ban its key has not
// claimed yet.
func TestBanRestoredForget(t *testing.T) {
	z := banZone(t, time.Hour)
	banAt(z, "mallory", epoch)
	next, _ := restart(t, z, epoch, epoch, time.Hour)
	if !next.Forget("mallory") {
		t.Fatal("Forget of a restored ban reported no key")
	}
	if d := TakeBanAt(next, "mallory", epoch.Add(time.Minute), 0); !d.Allowed {
		t.Fatalf("after Forget: %+v, want served", d)
	}
}

// TestBanSnapshotVersions: a zone without a ban writes version 2, as
// before bans, which a zone with a ban reads; a zone without a ban drops
// the bans of a version 3 file.
func TestBanSnapshotVersions(t *testing.T) {
	plain := persistZone(t, "login", banRule, 0)
	for i := 0; i < 4; i++ {
		TakeAt(plain, "k", epoch)
	}
	var buf bytes.Buffer
	if _, err := plain.Snapshot(&buf, epoch); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[len(snapshotMagic)]; v != snapshotNoBans {
		t.Fatalf("a zone without a ban writes version %d, want %d", v, snapshotNoBans)
	}
	withBan := banZone(t, time.Hour)
	if _, err := withBan.Restore(bytes.NewReader(buf.Bytes()), epoch); err != nil {
		t.Fatalf("a version 2 file into a ban zone: %v", err)
	}
	if d := TakeBanAt(withBan, "k", epoch, 0); d.Allowed {
		t.Fatalf("the restored count does not hold: %+v", d)
	}

	z := banZone(t, time.Hour)
	banAt(z, "mallory", epoch)
	noBan, _ := restart(t, z, epoch, epoch.Add(10*time.Second), 0)
	if d := TakeAt(noBan, "mallory", epoch.Add(10*time.Second)); !d.Allowed {
		t.Fatalf("a zone without a ban kept a restored ban: %+v", d)
	}
}

// TestBanSnapshotHostile: a version 3 file that claims more bans than
// the zone holds, or than it has bytes, or a ban ending past the bound,
// is refused.
func TestBanSnapshotHostile(t *testing.T) {
	z := banZone(t, time.Hour)
	banAt(z, "mallory", epoch)
	sn, err := z.takeSnapshot(epoch)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := sn.marshal()
	if _, err := unmarshalSnapshot(good, testLimits); err != nil {
		t.Fatal(err)
	}
	// The ban section is the end: count, id, end, then the checksum.
	body := good[:len(good)-4]
	n := 1 + 8 + binary.PutUvarint(make([]byte, binary.MaxVarintLen64), uint64(sn.bans[0].until))
	head := body[:len(body)-n]
	seal := func(b []byte) []byte { return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)) }
	for name, tail := range map[string][]byte{
		"a billion bans":   binary.AppendUvarint(nil, 1e9),
		"a ban past bound": binary.AppendUvarint(binary.LittleEndian.AppendUint64([]byte{1}, 7), uint64(maxSnapshotTime)),
		"a ban cut short":  {1, 7, 7},
		"trailing bytes":   append(append([]byte(nil), body[len(body)-n:]...), 0),
		"no ban section":   nil,
	} {
		b := seal(append(append([]byte(nil), head...), tail...))
		if _, err := unmarshalSnapshot(b, testLimits); err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Errorf("%s: got %v, want a corrupt snapshot", name, err)
		}
	}
}
