package ratelimit

import (
	"strconv"
	"testing"
	"time"
)

// TestEvictingReported: the sweeper tells the host how many keys that still
// counted were evicted since its last report, and says nothing while the
// zone is not full.
func TestEvictingReported(t *testing.T) {
	reports := make(chan uint64, 16)
	z, err := NewZone("full", Rule{Window: time.Hour, Limit: 5}, Options{
		MaxKeys:       64,
		SweepInterval: MinSweepInterval,
		Evicting:      func(n uint64) { reports <- n },
		EvictingEvery: MinSweepInterval,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	now := time.Now()
	for i := 0; i < 64; i++ {
		TakeAt(z, "k"+strconv.Itoa(i), now)
	}
	select {
	case n := <-reports:
		t.Fatalf("reported %d evictions while the zone had room", n)
	case <-time.After(3 * MinSweepInterval):
	}
	for i := 64; i < 64+40; i++ {
		TakeAt(z, "k"+strconv.Itoa(i), now)
	}
	var total uint64
	deadline := time.After(time.Minute) // evictions never reported, not late ones
	for total < 40 {
		select {
		case n := <-reports:
			total += n
		case <-deadline:
			t.Fatalf("reported %d evictions, want 40", total)
		}
	}
	if total != 40 || z.Stats().Evictions != 40 {
		t.Fatalf("reported %d, stats %+v: want 40", total, z.Stats())
	}
}

// TestEvictingAtMostEvery: however many sweeps see evictions, Evicting is
// called at most once every EvictingEvery, with what it missed.
func TestEvictingAtMostEvery(t *testing.T) {
	reports := make(chan uint64, 16)
	z, err := NewZone("full", Rule{Window: time.Hour, Limit: 5}, Options{
		MaxKeys:       16,
		SweepInterval: MinSweepInterval,
		Evicting:      func(n uint64) { reports <- n },
		EvictingEvery: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	now := time.Now()
	for i := 0; i < 20; i++ {
		TakeAt(z, "k"+strconv.Itoa(i), now)
	}
	if n := <-reports; n != 4 {
		t.Fatalf("first report %d, want 4", n)
	}
	for i := 20; i < 30; i++ {
		TakeAt(z, "k"+strconv.Itoa(i), now)
	}
	select {
	case n := <-reports:
		t.Fatalf("reported %d more within the hour", n)
	case <-time.After(5 * MinSweepInterval):
	}
}
