package ratelimit

import (
	"io"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSnapshotLatency prints the p99 latency of requests of keys new
// to the process (half of them restored keys seen again, half keys never
// seen) in a zone of 1,000,000 restored keys while it is snapshotted back
// to back, and the same requests in the same zone with persist off, which
// takes no snapshot; and their ratio. A snapshot of a zone right after a
// restart encodes the restored keys not yet seen again: a request must
// not wait for that. docs/benchmarks.md quotes it:
//
//	go test -count=1 -run '^$' -bench SnapshotLatency -benchtime 1x ./shared/ratelimit
//
// The workload is fixed (b.N only repeats it): 90,000 requests a mode at
// one every 40 µs, 3.6 s.
func BenchmarkSnapshotLatency(b *testing.B) {
	const n = 1_000_000
	rule := Rule{Window: time.Minute, Limit: 100}
	now := time.Now()
	at := now.Add(6 * time.Second)
	old := persistZone(b, "lat", rule, 2*n)
	restored := make([]string, n)
	for i := range restored {
		restored[i] = "10." + strconv.Itoa(i>>16) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
		TakeAt(old, restored[i], now.Add(time.Duration(i%60)*time.Second/10).UnixNano())
	}
	sn, err := old.takeSnapshot(at)
	if err != nil {
		b.Fatal(err)
	}
	old = nil
	// Three rounds of each, one after the other, so that both meet the
	// same neighbours on a shared machine; their latencies pooled.
	const rounds, requests = 3, 30_000
	keys := make([]string, rounds*requests)
	for i := range keys {
		if i%2 == 0 {
			keys[i] = restored[(i*7919)%n]
		} else {
			keys[i] = "fd00::" + strconv.Itoa(i)
		}
	}
	restored = nil
	b.ResetTimer()
	for r := 0; r < b.N; r++ {
		var off, on []time.Duration
		snaps := 0
		for round := 0; round < rounds; round++ {
			some := keys[round*requests : (round+1)*requests]
			z, err := NewZone("lat", rule, Options{MaxKeys: 2 * n, SweepInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			off = append(off, newKeyLatency(z, some, at, false)...)

			z = persistZone(b, "lat", rule, 2*n)
			cp := *sn // restore keeps its snapshot: give it a copy of the arrays
			cp.ids = append([]uint64(nil), sn.ids...)
			cp.newest = append([]int64(nil), sn.newest...)
			cp.cells = append([]uint32(nil), sn.cells...)
			if _, err := z.restore(&cp, at); err != nil {
				b.Fatal(err)
			}
			lat := newKeyLatency(z, some, at, true)
			snaps += int(lat[len(lat)-1])
			on = append(on, lat[:len(lat)-1]...)
		}
		offP99, onP99 := p99(off), p99(on)
		b.ReportMetric(float64(offP99.Nanoseconds()), "p99-off-ns")
		b.ReportMetric(float64(onP99.Nanoseconds()), "p99-on-ns")
		b.ReportMetric(float64(onP99)/float64(offP99), "p99-ratio")
		b.Logf("%d restored keys, %d requests of new keys a mode: p99 %v with persist off; %v with persist on while snapshotting back to back (%d snapshots): ratio %.2f",
			n, len(keys), offP99, onP99, snaps, float64(onP99)/float64(offP99))
	}
}

// p99 returns the 99th percentile of lat, which it sorts.
func p99(lat []time.Duration) time.Duration {
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return lat[len(lat)*99/100]
}

// newKeyLatency takes keys in z at t, one every 40 µs of wall time from
// one goroutine, and returns their latencies, each from the time the
// request was due, not when it started: a request held up holds up those
// due behind it, as a load generator at a fixed rate sees. With snap,
// a second goroutine snapshots z back to back meanwhile, and the number of
// snapshots it took is appended to the latencies.
func newKeyLatency(z *Zone, keys []string, t time.Time, snap bool) []time.Duration {
	const every = 40 * time.Microsecond
	var stop atomic.Bool
	var wg sync.WaitGroup
	snaps := 0
	if snap {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := z.Snapshot(io.Discard, t); err != nil {
					panic(err)
				}
				snaps++
			}
		}()
		time.Sleep(10 * time.Millisecond) // let the first snapshot start
	}
	lat := make([]time.Duration, len(keys), len(keys)+1)
	ns := t.UnixNano()
	start := time.Now()
	for i, k := range keys {
		due := time.Duration(i) * every
		for time.Since(start) < due {
		}
		TakeAt(z, k, ns)
		lat[i] = time.Since(start) - due
	}
	stop.Store(true)
	wg.Wait()
	if snap {
		lat = append(lat, time.Duration(snaps))
	}
	return lat
}
