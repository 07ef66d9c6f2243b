package ratelimit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// seedSnapshots returns encoded snapshots of every algorithm, one of them
// with a summary of evicted keys: the fuzzer's seeds.
func seedSnapshots(t testing.TB) [][]byte {
	var out [][]byte
	at := time.Unix(1_800_000_000, 0)
	for i, rule := range snapshotRules {
		maxKeys := 0
		if i == 0 {
			maxKeys = 16 // evicts: the snapshot has a sketch
		}
		z := persistZone(t, "fz", rule, maxKeys)
		for j := 0; j < 40; j++ {
			TakeAt(z, "k"+strconv.Itoa(j%23), at.Add(time.Duration(j)*time.Second/3))
		}
		sn, err := z.takeSnapshot(at.Add(15 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := sn.marshal()
		out = append(out, b)
	}
	// A zone with a ban: a version 3 file, with bans.
	z, err := NewZone("fz", snapshotRules[0], Options{SweepInterval: -1, Persist: true, Ban: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < 40; j++ {
		TakeBanAt(z, "k"+strconv.Itoa(j%7), at.Add(time.Duration(j)*time.Second/3), 0)
	}
	sn, err := z.takeSnapshot(at.Add(15 * time.Second))
	if err != nil || len(sn.bans) == 0 {
		t.Fatalf("a ban zone's snapshot: %d bans, %v", len(sn.bans), err)
	}
	b, _ := sn.marshal()
	return append(out, b)
}

// FuzzReadSnapshot feeds the snapshot reader arbitrary bytes: it must
// return an error or a snapshot, never panic; a snapshot it returns
// restores into a zone of its shape, which then decides requests with
// counts no smaller than the snapshot's, and encodes back to itself.
func FuzzReadSnapshot(f *testing.F) {
	for _, b := range seedSnapshots(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sn, err := unmarshalSnapshot(data, testLimits)
		if err != nil {
			return
		}
		again, err := sn.marshal()
		if err != nil {
			t.Fatal(err)
		}
		sn2, err := unmarshalSnapshot(again, testLimits)
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if sn2.len() != sn.len() || len(sn2.bans) != len(sn.bans) {
			t.Fatalf("re-encoded snapshot has %d keys and %d bans, want %d and %d", sn2.len(), len(sn2.bans), sn.len(), len(sn.bans))
		}
		rule := Rule{Window: time.Duration(sn.window), SubWindow: time.Duration(sn.subWindow), Limit: 3, Algorithm: sn.algorithm}
		var ban time.Duration
		if sn.version == snapshotVersion {
			ban = time.Minute
		}
		z, err := NewZone(sn.name, rule, Options{MaxKeys: 64, SweepInterval: -1, Persist: true, Ban: ban})
		if err != nil {
			t.Fatalf("a decoded snapshot's shape is refused: %v", err)
		}
		now := time.Unix(0, sn.taken)
		if _, err := z.restore(sn, now); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 70; i++ {
			if ban > 0 {
				TakeBanAt(z, "k"+strconv.Itoa(i), now, 0)
			} else {
				TakeAt(z, "k"+strconv.Itoa(i), now)
			}
		}
		if _, err := z.takeSnapshot(now); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWriteFuzzSeeds writes the fuzzer's committed seeds, when
// WL_WRITE_FUZZ_SEEDS is set: go test -run TestWriteFuzzSeeds ./shared/ratelimit
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("WL_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set WL_WRITE_FUZZ_SEEDS to rewrite testdata/fuzz/FuzzReadSnapshot")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReadSnapshot")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, b := range seedSnapshots(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
