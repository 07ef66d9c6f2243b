package ratelimit

import (
	"bytes"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func persistZone(t testing.TB, name string, rule Rule, maxKeys int) *Zone {
	t.Helper()
	z, err := NewZone(name, rule, Options{MaxKeys: maxKeys, SweepInterval: -1, Persist: true})
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// roundTrip passes sn through the file encoding, as a restart does.
func roundTrip(t testing.TB, sn *snapshot) *snapshot {
	t.Helper()
	b, err := sn.marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := unmarshalSnapshot(b, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

var snapshotRules = []Rule{
	{Window: time.Minute, Limit: 5, Algorithm: Sliding},
	{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 20, Algorithm: Strict},
	{Window: time.Minute, Limit: 7, Algorithm: Fixed},
	{Window: time.Minute, Limit: 5, Algorithm: Log},
	{Window: 10 * time.Second, SubWindow: time.Second, Limit: 9, Cost: 2, Algorithm: Sliding},
}

// TestRestoreDecidesAsIfNoRestart drives a zone with random requests,
// snapshots it, restores the snapshot (through the file encoding) into a
// new zone, and drives both with the same requests at the same times: a
// zone that never restarted and the restored one decide alike, for every
// algorithm, across a gap, with the clock stepped back across the
// restart, and after evictions (their summary is checked never to say
// less).
func TestRestoreDecidesAsIfNoRestart(t *testing.T) {
	seeds := int64(20)
	if raceEnabled {
		seeds = 5
	}
	for ri, rule := range snapshotRules {
		for _, sc := range []struct {
			name    string
			gap     time.Duration // from the snapshot to the restart's first request
			maxKeys int
			keys    int
		}{
			{"gap1s", time.Second, 0, 40},
			{"gap20s", 20 * time.Second, 0, 40},
			{"stepback", -7 * time.Second, 0, 40},
			{"evictions", time.Second, 64, 400},
			{"evictions-stepback", -7 * time.Second, 64, 400},
		} {
			t.Run(rule.Algorithm.String()+strconv.Itoa(ri)+"/"+sc.name, func(t *testing.T) {
				for seed := int64(1); seed <= seeds; seed++ {
					restoreOnce(t, rule, sc.gap, sc.maxKeys, sc.keys, seed)
				}
			})
		}
	}
}

func restoreOnce(t *testing.T, rule Rule, gap time.Duration, maxKeys, keys int, seed int64) {
	rnd := rand.New(rand.NewSource(seed))
	ref := persistZone(t, "z", rule, maxKeys)
	at := time.Unix(1_800_000_000, 0).Add(time.Duration(rnd.Int63n(int64(time.Minute))))
	key := func() string { return "k" + strconv.Itoa(rnd.Intn(keys)) }
	for i := 0; i < 3000; i++ {
		at = at.Add(time.Duration(rnd.Int63n(int64(40 * time.Millisecond))))
		TakeAt(ref, key(), at)
	}
	sn, err := ref.takeSnapshot(at)
	if err != nil {
		t.Fatal(err)
	}
	got := persistZone(t, "z", rule, maxKeys)
	restartAt := at.Add(gap)
	if _, err := got.restore(roundTrip(t, sn), restartAt); err != nil {
		t.Fatal(err)
	}
	if maxKeys > 0 {
		// Evicted keys: the restored summary never says less than the
		// zone's own.
		for i := 0; i < keys; i++ {
			k := "k" + strconv.Itoa(i)
			a, b := ref.Inspect(k, restartAt), got.Inspect(k, restartAt)
			if !a.Tracked && b.Count < a.Count {
				t.Fatalf("seed %d: evicted key %s: restored count %d < %d", seed, k, b.Count, a.Count)
			}
		}
	}
	// The keys the reference tracks: with evictions, only they are asked
	// again, so that neither zone evicts (which samples at random).
	var tracked []string
	for i := 0; i < keys; i++ {
		k := "k" + strconv.Itoa(i)
		if ref.Inspect(k, at).Tracked {
			tracked = append(tracked, k)
		}
	}
	if len(tracked) == 0 {
		return
	}
	at = restartAt
	for i := 0; i < 2000; i++ {
		at = at.Add(time.Duration(rnd.Int63n(int64(60 * time.Millisecond))))
		k := key()
		if maxKeys > 0 {
			k = tracked[rnd.Intn(len(tracked))]
		}
		a, b := TakeAt(ref, k, at), TakeAt(got, k, at)
		if a != b {
			t.Fatalf("seed %d, request %d on %s at +%v: restored %+v, never restarted %+v", seed, i, k, at.Sub(restartAt), b, a)
		}
	}
}

// TestSnapshotDropsExpired: a restart after the window restores nothing,
// one a second later nearly everything.
func TestSnapshotDropsExpired(t *testing.T) {
	rule := Rule{Window: time.Minute, Limit: 5}
	z := persistZone(t, "login", rule, 0)
	at := time.Unix(1_800_000_000, 0)
	for i := 0; i < 100; i++ {
		for j := 0; j < 5; j++ {
			TakeAt(z, "c"+strconv.Itoa(i), at)
		}
	}
	sn, _ := z.takeSnapshot(at)
	if sn.len() != 100 {
		t.Fatalf("snapshot holds %d keys, want 100", sn.len())
	}
	later := persistZone(t, "login", rule, 0)
	if n, _ := later.restore(roundTrip(t, sn), at.Add(time.Hour)); n != 0 {
		t.Fatalf("an hour later restored %d keys, want 0", n)
	}
	soon := persistZone(t, "login", rule, 0)
	if n, _ := soon.restore(roundTrip(t, sn), at.Add(time.Second)); n != 100 {
		t.Fatalf("a second later restored %d keys, want 100", n)
	}
	d := TakeAt(soon, "c7", at.Add(time.Second))
	if d.Allowed {
		t.Fatalf("a restored key at its limit was admitted: %+v", d)
	}
	if st := soon.Stats(); st.Pending != 99 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRestoreRefusesOtherShapes: only a zone of the same name, window,
// sub-window and algorithm takes a snapshot; the limit may differ.
func TestRestoreRefusesOtherShapes(t *testing.T) {
	rule := Rule{Window: time.Minute, Limit: 5}
	z := persistZone(t, "a", rule, 0)
	at := time.Unix(1_800_000_000, 0)
	TakeAt(z, "x", at)
	sn, _ := z.takeSnapshot(at)
	for _, other := range []struct {
		name string
		rule Rule
		ok   bool
	}{
		{"a", Rule{Window: time.Minute, Limit: 50}, true},
		{"b", rule, false},
		{"a", Rule{Window: 2 * time.Minute, Limit: 5}, false},
		{"a", Rule{Window: time.Minute, SubWindow: 30 * time.Second, Limit: 5}, false},
		{"a", Rule{Window: time.Minute, Limit: 5, Algorithm: Strict}, false},
	} {
		_, err := persistZone(t, other.name, other.rule, 0).restore(roundTrip(t, sn), at)
		if (err == nil) != other.ok {
			t.Errorf("restore into %q %+v: err %v", other.name, other.rule, err)
		}
	}
	if _, err := mustPlainZone(t).restore(sn, at); err == nil {
		t.Error("a zone without Persist took a snapshot")
	}
}

func mustPlainZone(t *testing.T) *Zone {
	z, err := NewZone("a", Rule{Window: time.Minute, Limit: 5}, Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// TestRestoreTwice: keys restored but not seen again before the next
// snapshot are in it, so that two restarts in a row lose nothing.
func TestRestoreTwice(t *testing.T) {
	rule := Rule{Window: time.Minute, Limit: 3}
	at := time.Unix(1_800_000_000, 0)
	z := persistZone(t, "z", rule, 0)
	for i := 0; i < 3; i++ {
		TakeAt(z, "a", at)
		TakeAt(z, "b", at)
	}
	sn, _ := z.takeSnapshot(at)
	z2 := persistZone(t, "z", rule, 0)
	z2.restore(roundTrip(t, sn), at)
	TakeAt(z2, "a", at) // claims a; b stays pending
	sn2, _ := z2.takeSnapshot(at)
	if sn2.len() != 2 {
		t.Fatalf("second snapshot holds %d keys, want 2", sn2.len())
	}
	z3 := persistZone(t, "z", rule, 0)
	z3.restore(roundTrip(t, sn2), at.Add(time.Second))
	for _, k := range []string{"a", "b"} {
		if d := TakeAt(z3, k, at.Add(time.Second)); d.Allowed {
			t.Fatalf("%s admitted after two restarts: %+v", k, d)
		}
	}
}

// TestSnapshotFileErrors: every bad file is an error, never a panic or
// a snapshot.
func TestSnapshotFileErrors(t *testing.T) {
	rule := Rule{Window: time.Minute, Limit: 5}
	z := persistZone(t, "z", rule, 0)
	at := time.Unix(1_800_000_000, 0)
	for i := 0; i < 50; i++ {
		TakeAt(z, "k"+strconv.Itoa(i), at)
	}
	sn, _ := z.takeSnapshot(at)
	good, _ := sn.marshal()
	for n := 0; n < len(good); n++ {
		if _, err := unmarshalSnapshot(good[:n], testLimits); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
	for i := 0; i < len(good); i++ {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		if _, err := unmarshalSnapshot(bad, testLimits); err == nil {
			t.Fatalf("byte %d flipped: no error", i)
		}
	}
	future := bytes.Clone(good)
	future[len(snapshotMagic)] = snapshotVersion + 1
	if _, err := unmarshalSnapshot(future, testLimits); err == nil || !bytes.Contains([]byte(err.Error()), []byte("version")) {
		t.Fatalf("future version: %v", err)
	}

	// More than a zone of its max keys can take is refused unread.
	huge := make([]byte, snapshotBound(z.Rule(), 0)+1)
	copy(huge, good)
	if _, err := persistZone(t, "z", rule, 0).Restore(bytes.NewReader(huge), at); err == nil || !strings.Contains(err.Error(), "bytes a zone") {
		t.Fatalf("an oversized snapshot: %v", err)
	}
	if n, err := persistZone(t, "z", rule, 0).Restore(bytes.NewReader(good), at); err != nil || n != 50 {
		t.Fatalf("the good snapshot through Restore: %d keys, %v", n, err)
	}
}

// TestSnapshotConcurrent takes snapshots while requests run, for the race
// detector, and checks that a key seen whole before stays whole.
func TestSnapshotConcurrent(t *testing.T) {
	z := persistZone(t, "z", Rule{Window: time.Minute, Limit: 1000}, 0)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				TakeAt(z, fmt.Sprintf("%d-%d", g, i%500), time.Now())
			}
		}(g)
	}
	for i := 0; i < 20; i++ {
		if _, err := z.takeSnapshot(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestForgetRestoredKey: an operator's reset of a restored key not seen
// since the restart is a reset: the key's next request starts afresh.
func TestForgetRestoredKey(t *testing.T) {
	rule := Rule{Window: time.Minute, Limit: 2}
	at := time.Unix(1_800_000_000, 0)
	z := persistZone(t, "z", rule, 0)
	TakeAt(z, "a", at)
	TakeAt(z, "a", at)
	sn, _ := z.takeSnapshot(at)
	z2 := persistZone(t, "z", rule, 0)
	z2.restore(roundTrip(t, sn), at)
	if st := z2.Inspect("a", at); st.Count != 2 {
		t.Fatalf("restored key before its first request: %+v, want count 2", st)
	}
	if !z2.Forget("a") {
		t.Fatal("Forget of a restored key reported nothing")
	}
	if d := TakeAt(z2, "a", at); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("after the reset: %+v, want a fresh budget", d)
	}
}

// TestFoldSketchWidths: a summary of evicted keys folded into one of
// another width never says less for any key it held.
func TestFoldSketchWidths(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	const now = int64(1_000)
	for _, widths := range [][2]int{{32, 16}, {16, 64}, {64, 64}} {
		src := &sketch{}
		src.width, src.shift = sketchWidth(widths[0] / 2)
		src.counts = make([]uint32, sketchRows*src.width)
		src.until = make([]int64, sketchRows*src.width)
		keys := make([]uint64, 40)
		for i := range keys {
			keys[i] = rnd.Uint64()
			src.add(0, keys[i], uint32(1+rnd.Intn(9)), now+int64(1+rnd.Intn(100)), now)
		}
		dst := &sketch{}
		dst.width, dst.shift = sketchWidth(widths[1] / 2)
		dst.counts = make([]uint32, sketchRows*dst.width)
		dst.until = make([]int64, sketchRows*dst.width)
		dst = foldInto(dst, src)
		for _, k := range keys {
			c1, u1 := src.estimate(k, now)
			c2, u2 := dst.estimate(k, now)
			if c2 < c1 || u2 < u1 {
				t.Fatalf("widths %v: key %x: folded %d until %d < %d until %d", widths, k, c2, u2, c1, u1)
			}
		}
	}
}

// TestSnapshotMatchesTaken: what Snapshot streams holds what
// takeSnapshot takes, key by key, with the summary of evicted keys and
// the restored keys not seen since, for every algorithm.
func TestSnapshotMatchesTaken(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	for _, rule := range snapshotRules {
		z := persistZone(t, "z", rule, 64)
		for i := 0; i < 300; i++ {
			TakeAt(z, "k"+strconv.Itoa(i%150), at.Add(time.Duration(i)*20*time.Millisecond))
		}
		sn, _ := z.takeSnapshot(at.Add(6 * time.Second))
		z2 := persistZone(t, "z", rule, 64)
		z2.restore(roundTrip(t, sn), at.Add(6*time.Second))
		for i := 0; i < 20; i++ {
			TakeAt(z2, "k"+strconv.Itoa(i), at.Add(7*time.Second))
		}
		now := at.Add(8 * time.Second)
		var buf bytes.Buffer
		n, err := z2.Snapshot(&buf, now)
		if err != nil {
			t.Fatal(err)
		}
		streamed, err := unmarshalSnapshot(buf.Bytes(), testLimits)
		if err != nil {
			t.Fatal(err)
		}
		taken, _ := z2.takeSnapshot(now)
		if n != taken.len() || streamed.len() != taken.len() {
			t.Fatalf("%v: streamed %d (%d) keys, snapshot %d", rule.Algorithm, n, streamed.len(), taken.len())
		}
		byID := func(sn *snapshot) map[uint64]string {
			out := make(map[uint64]string)
			m := sn.ring()
			for j, id := range sn.ids {
				if sn.algorithm == Log {
					out[id] = fmt.Sprint(sn.ts[sn.off[j] : sn.off[j]+sn.cnt[j]])
				} else {
					out[id] = fmt.Sprint(sn.newest[j], sn.cells[j*m:(j+1)*m])
				}
			}
			return out
		}
		a, b := byID(streamed), byID(taken)
		for id, v := range b {
			if a[id] != v {
				t.Fatalf("%v: key %x: streamed %s, snapshot %s", rule.Algorithm, id, a[id], v)
			}
		}
		ka, _ := taken.marshal()
		kb, _ := unmarshalSnapshot(ka, testLimits)
		if (streamed.sk == nil) != (kb.sk == nil) || streamed.sk != nil && fmt.Sprint(streamed.sk.counts, streamed.sk.until) != fmt.Sprint(kb.sk.counts, kb.sk.until) {
			t.Fatalf("%v: the summaries of evicted keys differ", rule.Algorithm)
		}
	}
}
