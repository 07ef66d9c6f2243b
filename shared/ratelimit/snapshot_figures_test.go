package ratelimit

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSnapshotFigures prints, for a zone of 100,000 and of 1,000,000
// keys, the time a snapshot takes, its file's size and bytes per key, the
// time to read and restore it, the time for every key to be claimed, and
// what snapshotting back to back costs requests running meanwhile (their
// throughput and p99 against none). docs/benchmarks.md quotes it:
//
//	WL_SNAPSHOT_FIGURES=1 go test -count=1 -run TestSnapshotFigures -v ./shared/ratelimit
func TestSnapshotFigures(t *testing.T) {
	if os.Getenv("WL_SNAPSHOT_FIGURES") == "" {
		t.Skip("set WL_SNAPSHOT_FIGURES=1 to measure")
	}
	for _, n := range []int{100_000, 1_000_000} {
		rule := Rule{Window: time.Minute, Limit: 100}
		z := persistZone(t, "fig", rule, n)
		now := time.Now()
		keys := make([]string, n)
		fill := time.Now()
		for i := range keys {
			keys[i] = "10." + strconv.Itoa(i>>16) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
			TakeAt(z, keys[i], now.Add(time.Duration(i%60)*time.Second/10))
		}
		filled := time.Since(fill)
		path := filepath.Join(t.TempDir(), "fig.wlsnap")
		at := now.Add(6 * time.Second)
		start := time.Now()
		sn, err := z.takeSnapshot(at)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		// The longest a shard stays locked: the copy of its slabs.
		var cp shardCopy
		var sk *sketch
		longest := time.Duration(0)
		for si := range z.shards {
			start := time.Now()
			cp.take(&z.shards[si], &sk)
			if d := time.Since(start); d > longest {
				longest = d
			}
		}
		start = time.Now()
		if err := writeSnapshot(path, sn); err != nil {
			t.Fatal(err)
		}
		wrote := time.Since(start)
		st, _ := os.Stat(path)
		z2 := persistZone(t, "fig", rule, n)
		start = time.Now()
		restored, err := loadSnapshot(z2, path, at.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		loaded := time.Since(start)
		start = time.Now()
		for _, k := range keys {
			TakeAt(z2, k, at.Add(time.Second))
		}
		claimed := time.Since(start)
		t.Logf("%d keys (max_keys %[1]d; %d tracked, the rest evicted into the summary): snapshot %v (shards locked one at a time, the longest %v), write+fsync %v, file %d bytes (%.1f B/key), read+restore %v (%d keys), first request of every key %v (%v when the zone was filled, key strings built too)",
			n, sn.len(), took.Round(time.Millisecond), longest.Round(time.Microsecond), wrote.Round(time.Millisecond), st.Size(), float64(st.Size())/float64(n), loaded.Round(time.Millisecond), restored, claimed.Round(time.Millisecond), filled.Round(time.Millisecond))

		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start = time.Now()
		if _, err := saveSnapshot(z, path, time.Now()); err != nil {
			t.Fatal(err)
		}
		saved := time.Since(start)
		runtime.ReadMemStats(&m1)
		t.Logf("%d keys: one save (what hosts call: Snapshot streamed from each shard's copy to a file, fsynced, renamed) takes %v and allocates %.1f MB",
			n, saved.Round(time.Millisecond), float64(m1.TotalAlloc-m0.TotalAlloc)/1e6)

		base, baseP99 := requestsUnder(z, keys, nil)
		var stop atomic.Bool
		var wg sync.WaitGroup
		snaps := 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := saveSnapshot(z, path, time.Now()); err != nil {
					t.Error(err)
					return
				}
				snaps++
			}
		}()
		busy, busyP99 := requestsUnder(z, keys, &stop)
		wg.Wait()
		t.Logf("%d keys: requests alone %.0f/s p99 %v; while snapshotting back to back (%d snapshots) %.0f/s p99 %v: throughput ratio %.3f, p99 ratio %.2f",
			n, base, baseP99, snaps, busy, busyP99, busy/base, float64(busyP99)/float64(baseP99))
	}
}

// requestsUnder runs two goroutines of requests on known keys for 2 s and
// returns their throughput and p99 latency (each sample times 64
// requests, so that the clock's own cost stays small); then sets stop.
func requestsUnder(z *Zone, keys []string, stop *atomic.Bool) (float64, time.Duration) {
	const batch = 64
	var mu sync.Mutex
	var lat []time.Duration
	total := 0
	deadline := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var mine []time.Duration
			i := g * 7919
			for n := 0; n < 1e8 && time.Now().Before(deadline); n++ {
				start := time.Now()
				for j := 0; j < batch; j++ {
					i = (i + 104729) % len(keys)
					TakeAt(z, keys[i], start)
				}
				mine = append(mine, time.Since(start)/batch)
			}
			mu.Lock()
			lat = append(lat, mine...)
			total += len(mine) * batch
			mu.Unlock()
		}(g)
	}
	wg.Wait()
	if stop != nil {
		stop.Store(true)
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return float64(total) / 2, lat[len(lat)*99/100]
}

// saveSnapshot writes a snapshot of z to path as the persist package's
// Save does, which this package's tests cannot import: to a temporary
// file, synced, then renamed over path.
func saveSnapshot(z *Zone, path string, now time.Time) (int, error) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return 0, err
	}
	n, err := z.Snapshot(f, now)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	return n, err
}

// writeSnapshot writes sn to path, synced.
func writeSnapshot(path string, sn *snapshot) error {
	data, err := sn.marshal()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// loadSnapshot restores the snapshot at path into z.
func loadSnapshot(z *Zone, path string, now time.Time) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return z.Restore(f, now)
}
