package ratelimit

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// ipKey returns a realistic IPv4 key for i.
func ipKey(i int) string {
	return "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
}

func benchZone(b *testing.B, alg Algorithm, maxKeys int) *Zone {
	rule := Rule{Window: time.Minute, Limit: MaxLimit, Algorithm: alg}
	if alg == Log {
		rule.Limit = MaxLogLimit
	}
	return newZone(b, "test", rule, Options{MaxKeys: maxKeys})
}

// BenchmarkTakeHotKey is one key, admitted, in its current sub-window: the
// steady state of a busy client.
func BenchmarkTakeHotKey(b *testing.B) {
	z := benchZone(b, Sliding, 0)
	t := start.UnixNano()
	TakeAt(z, "203.0.113.7", time.Unix(0, t))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		TakeAt(z, "203.0.113.7", time.Unix(0, t))
	}
}

func BenchmarkTakeHotKeyParallel(b *testing.B) {
	z := benchZone(b, Sliding, 0)
	t := start.UnixNano()
	TakeAt(z, "203.0.113.7", time.Unix(0, t))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			TakeAt(z, "203.0.113.7", time.Unix(0, t))
		}
	})
}

// BenchmarkTakeDenied is one key over its limit: the attack steady state.
func BenchmarkTakeDenied(b *testing.B) {
	z := newZone(b, "test", Rule{Window: time.Minute, Limit: 10}, Options{})
	t := start.UnixNano()
	for i := 0; i < 10; i++ {
		TakeAt(z, "203.0.113.7", time.Unix(0, t))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		TakeAt(z, "203.0.113.7", time.Unix(0, t))
	}
}

// BenchmarkTakeMillionKeys spreads requests over 1M existing keys, moving
// through time so that sub-windows roll: cache misses and rolls included.
func BenchmarkTakeMillionKeys(b *testing.B) {
	const keys = 1 << 20
	z := benchZone(b, Sliding, 2*keys)
	names := make([]string, keys)
	for i := range names {
		names[i] = ipKey(i)
		TakeAt(z, names[i], start)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		TakeAt(z, names[(i*7919)&(keys-1)], start.Add(time.Duration(i)*time.Microsecond))
	}
}

func BenchmarkTakeMillionKeysParallel(b *testing.B) {
	const keys = 1 << 20
	z := benchZone(b, Sliding, 2*keys)
	names := make([]string, keys)
	for i := range names {
		names[i] = ipKey(i)
		TakeAt(z, names[i], start)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)) * 104729
		for pb.Next() {
			i++
			TakeAt(z, names[(i*7919)&(keys-1)], start.Add(time.Duration(i)*time.Microsecond))
		}
	})
}

func BenchmarkTakeLog(b *testing.B) {
	z := newZone(b, "test", Rule{Window: time.Minute, Limit: 100, Algorithm: Log}, Options{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Two requests a second against 100 a minute: always admitted, the
		// oldest timestamp leaving as each new one comes.
		TakeAt(z, "k", start.Add(time.Duration(i)*700*time.Millisecond))
	}
}

// BenchmarkTakeAllThreeRules is the SMS case: three rules on one key.
func BenchmarkTakeAllThreeRules(b *testing.B) {
	items := []Item{
		{Zone: benchZone(b, Strict, 0), Key: "+15550100"},
		{Zone: benchZone(b, Strict, 0), Key: "+15550100"},
		{Zone: benchZone(b, Strict, 0), Key: "+15550100"},
	}
	out := make([]Decision, len(items))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		TakeAll(start, items, out)
	}
}

// BenchmarkBytesPerKey reports the heap held per tracked key (the key's own
// bytes included) at 10 sub-windows, for a million IPv4 keys.
func BenchmarkBytesPerKey(b *testing.B) {
	const keys = 1 << 20
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		z, err := NewZone("mem", Rule{Window: time.Minute, Limit: 100}, Options{MaxKeys: 2 * keys, SweepInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		for k := 0; k < keys; k++ {
			TakeAt(z, ipKey(k), start)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if z.Len() != keys {
			b.Fatalf("tracking %d keys, want %d", z.Len(), keys)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/keys, "B/key")
		// The sketch of evicted keys is allocated once the zone is full:
		// fixed, per key of max_keys.
		b.ReportMetric(float64(len(z.shards)*sketchBytes(z.perShard))/float64(2*keys), "sketch-B/max_key")
		runtime.KeepAlive(z)
		z.Close()
	}
}
