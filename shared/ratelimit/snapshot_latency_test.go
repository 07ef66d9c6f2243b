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
// seen), those due while a snapshot runs, in a zone of 1,000,000 restored
// keys snapshotted half the time (each snapshot followed by a pause as
// long as it took), and of the same requests in the same zone with
// persist off, which takes no snapshot; and their ratio, pooled and the
// median of the rounds'. A snapshot of a zone right after a restart encodes the
// restored keys not yet seen again: a request must not wait for that.
//
// It also prints the p99 of the same requests with persist off while a
// goroutine only spins, 50 ms at a time with a pause as long, and its
// ratio: the floor that any work on the machine's other core sets, which
// a snapshot, whatever it does, cannot go below.
// docs/benchmarks.md quotes it:
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
		TakeAt(old, restored[i], now.Add(time.Duration(i%60)*time.Second/10))
	}
	sn, err := old.takeSnapshot(at)
	if err != nil {
		b.Fatal(err)
	}
	old = nil
	// Six rounds of each, one after the other, so that both meet the
	// same neighbours on a shared machine: the p99 of each mode's pooled
	// latencies, and the median of the rounds' own ratios, which one
	// round's noise does not move.
	const rounds, requests = 6, 15_000
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
		var off, on, spin []time.Duration
		var ratios []float64
		snaps := 0
		for round := 0; round < rounds; round++ {
			some := keys[round*requests : (round+1)*requests]
			z, err := NewZone("lat", rule, Options{MaxKeys: 2 * n, SweepInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			offRound := newKeyLatency(z, some, at, noWork)
			z.Close()
			z, err = NewZone("lat", rule, Options{MaxKeys: 2 * n, SweepInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			spinRound := newKeyLatency(z, some, at, spins)
			spin = append(spin, spinRound[:len(spinRound)-1]...)
			z.Close()

			z = persistZone(b, "lat", rule, 2*n)
			cp := *sn // restore keeps its snapshot: give it a copy of the arrays
			cp.ids = append([]uint64(nil), sn.ids...)
			cp.newest = append([]int64(nil), sn.newest...)
			cp.cells = append([]uint32(nil), sn.cells...)
			if _, err := z.restore(&cp, at); err != nil {
				b.Fatal(err)
			}
			onRound := newKeyLatency(z, some, at, snapshots)
			snaps += int(onRound[len(onRound)-1])
			onRound = onRound[:len(onRound)-1]
			off = append(off, offRound...)
			on = append(on, onRound...)
			ratios = append(ratios, float64(p99(onRound))/float64(p99(offRound)))
		}
		offP99, onP99, spinP99 := p99(off), p99(on), p99(spin)
		sort.Float64s(ratios)
		median := (ratios[rounds/2-1] + ratios[rounds/2]) / 2
		b.ReportMetric(float64(offP99.Nanoseconds()), "p99-off-ns")
		b.ReportMetric(float64(onP99.Nanoseconds()), "p99-on-ns")
		b.ReportMetric(float64(onP99)/float64(offP99), "p99-ratio")
		b.ReportMetric(float64(spinP99.Nanoseconds()), "p99-spin-ns")
		b.ReportMetric(float64(spinP99)/float64(offP99), "spin-ratio")
		b.ReportMetric(median, "median-round-ratio")
		b.Logf("%d restored keys, %d requests of new keys a mode: p99 %v with persist off; %v with persist on, of those due during a snapshot (%d snapshots): ratio %.2f; the rounds' ratios %.2f; %v with persist off while a goroutine spins, of those due during a spin: ratio %.2f",
			n, len(keys), offP99, onP99, snaps, float64(onP99)/float64(offP99), ratios, spinP99, float64(spinP99)/float64(offP99))
	}
}

// p99 returns the 99th percentile of lat, which it sorts.
func p99(lat []time.Duration) time.Duration {
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return lat[len(lat)*99/100]
}

// The work newKeyLatency runs beside the requests.
const (
	noWork    = iota
	snapshots // z.Snapshot, then a pause as long as it took
	spins     // 50 ms of spinning, then a pause as long
)

// newKeyLatency takes keys in z at t, one every 40 µs of wall time from
// one goroutine, and returns their latencies, each from the time the
// request was due, not when it started: a request held up holds up those
// due behind it, as a load generator at a fixed rate sees. With work, a
// second goroutine runs it meanwhile, and only the requests due while it
// ran are returned, followed by how many times it ran.
func newKeyLatency(z *Zone, keys []string, t time.Time, work int) []time.Duration {
	const every = 40 * time.Microsecond
	var stop atomic.Bool
	var wg sync.WaitGroup
	var during [][2]time.Duration // when each snapshot ran, since start
	start := time.Now()
	if work != noWork {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				from := time.Since(start)
				if work == spins {
					for time.Since(start)-from < 50*time.Millisecond {
					}
				} else if _, err := z.Snapshot(io.Discard, t); err != nil {
					panic(err)
				}
				to := time.Since(start)
				during = append(during, [2]time.Duration{from, to})
				time.Sleep(to - from)
			}
		}()
	}
	lat := make([]time.Duration, len(keys))
	ns := t.UnixNano()
	for i, k := range keys {
		due := time.Duration(i) * every
		if early := due - time.Since(start); early > 0 {
			time.Sleep(early) // idle, as a server between requests
		}
		TakeAt(z, k, time.Unix(0, ns))
		lat[i] = time.Since(start) - due
	}
	stop.Store(true)
	wg.Wait()
	if work == noWork {
		return lat
	}
	var in []time.Duration
	j := 0
	for i := range lat {
		due := time.Duration(i) * every
		for j < len(during) && during[j][1] < due {
			j++
		}
		if j < len(during) && due >= during[j][0] {
			in = append(in, lat[i])
		}
	}
	return append(in, time.Duration(len(during)))
}
