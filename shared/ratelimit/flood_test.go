package ratelimit

import (
	"strconv"
	"testing"
	"time"
)

// floodResult is what a flood of fresh keys did to a zone.
type floodResult struct {
	slipped, knocks      int // the limited client's admissions and tries
	served, newcomerAsks int // new well-behaved clients' admissions and tries
	maxLen               int
	stats                ZoneStats
}

// flood runs, from at, a flood of fresh keys, one every every
// nanoseconds, each sent perKey requests in a row, against a client that
// used its whole budget just before and knocks every 50 ms. With each knock a new
// well-behaved client sends one request; each sends limit requests, one
// per knock, then stops: its share of its budget is what it was served.
func flood(t *testing.T, z *Zone, at int64, keys, perKey int, every int64) floodResult {
	t.Helper()
	limit := int(z.Rule().Limit)
	for i := 0; i < limit; i++ {
		if !TakeAt(z, "client", time.Unix(0, at)).Allowed {
			t.Fatalf("the client's request %d was denied before the flood", i+1)
		}
	}
	if TakeAt(z, "client", time.Unix(0, at)).Allowed {
		t.Fatal("the client was admitted over its limit before the flood")
	}
	const knock = int64(50 * time.Millisecond)
	var r floodResult
	nextKnock := at + knock
	for i := 0; i < keys; i++ {
		key := "flood-" + strconv.Itoa(i)
		for j := 0; j < perKey; j++ {
			TakeAt(z, key, time.Unix(0, at))
		}
		at += every
		if at < nextKnock {
			continue
		}
		nextKnock += knock
		r.knocks++
		if TakeAt(z, "client", time.Unix(0, at)).Allowed {
			r.slipped++
		}
		// Newcomer n sends its requests at knocks n..n+limit-1.
		for n := r.knocks - limit + 1; n <= r.knocks; n++ {
			if n < 1 {
				continue
			}
			r.newcomerAsks++
			if TakeAt(z, "newcomer-"+strconv.Itoa(n), time.Unix(0, at)).Allowed {
				r.served++
			}
		}
		if n := z.Len(); n > r.maxLen {
			r.maxLen = n
		}
	}
	r.stats = z.Stats()
	return r
}

// TestFloodCannotFreeALimitedClient floods a zone of max_keys 1000 with
// 100 x max_keys fresh keys (20 x under -race) while a client at its
// limit keeps knocking: it must never get through, however the flood's
// keys are used, and the zone must stay within max_keys.
func TestFloodCannotFreeALimitedClient(t *testing.T) {
	tests := []struct {
		maxKeys int
		algs    []Algorithm
	}{
		{1000, allAlgorithms},
		{4096, []Algorithm{Sliding}}, // four shards
	}
	// 100 times max_keys of fresh keys; 20 times under -race.
	floodKeys := 100
	if raceEnabled {
		floodKeys = 20
	}
	for _, tt := range tests {
		for _, alg := range tt.algs {
			for _, perKey := range []int{1, 5} {
				name := alg.String() + "/max_keys=" + strconv.Itoa(tt.maxKeys) + "/requests_per_key=" + strconv.Itoa(perKey)
				t.Run(name, func(t *testing.T) {
					rule := Rule{Window: time.Minute, Limit: 5, Algorithm: alg}
					z := newZone(t, "test", rule, Options{MaxKeys: tt.maxKeys})
					// 25,000 fresh keys a second.
					r := flood(t, z, start.UnixNano(), floodKeys*tt.maxKeys, perKey, int64(40*time.Microsecond))
					if r.slipped != 0 {
						t.Errorf("the limited client got through %d of %d times", r.slipped, r.knocks)
					}
					if r.maxLen > tt.maxKeys {
						t.Errorf("tracking %d keys, max_keys %d", r.maxLen, tt.maxKeys)
					}
					if r.stats.Keys > tt.maxKeys || r.stats.Evictions == 0 {
						t.Errorf("stats %+v after the flood", r.stats)
					}
					t.Logf("%d requests per key: slipped %d/%d; new clients served %d/%d of their budget (%.0f%%); %+v",
						perKey, r.slipped, r.knocks, r.served, r.newcomerAsks, 100*float64(r.served)/float64(r.newcomerAsks), r.stats)
				})
			}
		}
	}
}

// TestModerateFlood is a flood a zone of max_keys 1000 nearly holds: ten
// times max_keys in a window of one minute. The limited client stays
// denied; what new clients get is logged.
func TestModerateFlood(t *testing.T) {
	for _, alg := range allAlgorithms {
		for _, perKey := range []int{1, 5} {
			t.Run(alg.String()+"/requests_per_key="+strconv.Itoa(perKey), func(t *testing.T) {
				z := newZone(t, "test", Rule{Window: time.Minute, Limit: 5, Algorithm: alg}, Options{MaxKeys: 1000})
				// 10,000 keys in 50 s: under ten times max_keys a window.
				r := flood(t, z, start.UnixNano(), 10000, perKey, int64(5*time.Millisecond))
				if r.slipped != 0 || r.maxLen > 1000 {
					t.Errorf("slipped %d of %d, tracking up to %d keys", r.slipped, r.knocks, r.maxLen)
				}
				t.Logf("%d requests per key: slipped %d/%d; new clients served %d/%d of their budget (%.0f%%); %+v",
					perKey, r.slipped, r.knocks, r.served, r.newcomerAsks, 100*float64(r.served)/float64(r.newcomerAsks), r.stats)
			})
		}
	}
}
