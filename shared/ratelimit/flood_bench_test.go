package ratelimit

import (
	"testing"
	"time"
)

// BenchmarkTakeFlood is the attack on memory: every request a fresh key
// into a full zone (max_keys 10,000, 25,000 new keys a second), so every
// decision creates a key and evicts another.
func BenchmarkTakeFlood(b *testing.B) {
	const maxKeys = 10000
	for _, alg := range []Algorithm{Sliding, Log} {
		b.Run(alg.String(), func(b *testing.B) {
			z := newZone(b, "test", Rule{Window: time.Minute, Limit: 5, Algorithm: alg}, Options{MaxKeys: maxKeys})
			names := make([]string, 1<<20)
			for i := range names {
				names[i] = ipKey(i)
			}
			at := start.UnixNano()
			for i := 0; i < maxKeys; i++ {
				TakeAt(z, names[i], time.Unix(0, at))
				at += int64(40 * time.Microsecond)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				TakeAt(z, names[(maxKeys+i)&(len(names)-1)], time.Unix(0, at))
				at += int64(40 * time.Microsecond)
			}
		})
	}
}
