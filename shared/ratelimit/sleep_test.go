package ratelimit

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond for up to a minute: long enough that only a cond
// that never holds, not a slow machine, runs it out.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A zone that holds nothing for SleepAfter sleeps, and its sweeper ends;
// its first new key wakes it with the sweeper back, and a key that still
// counts keeps it awake. The sweeper runs on the wall clock: the window
// is long beside the busy phase's 20 ms between requests, so that only a
// stall of seconds could let the zone sleep while in use.
func TestZoneSleepsAndWakes(t *testing.T) {
	before := runtime.NumGoroutine()
	var slept, woken int32
	rule := Rule{Window: 2 * time.Second, Limit: 2}
	z, err := NewZone("sleepy", rule, Options{
		SweepInterval: MinSweepInterval,
		SleepAfter:    300 * time.Millisecond,
		Sleep:         func(*Zone) bool { atomic.AddInt32(&slept, 1); return true },
		Woken:         func(*Zone) { atomic.AddInt32(&woken, 1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if !waitFor(z.asleepNow) {
		t.Fatal("an empty zone does not sleep")
	}
	if !waitFor(func() bool { return runtime.NumGoroutine() <= before }) {
		t.Errorf("goroutines: %d before, %d with the zone asleep", before, runtime.NumGoroutine())
	}
	// Asleep, it still answers, and the first key wakes it.
	now := time.Now()
	for range 2 {
		if !TakeAt(z, "a", now).Allowed {
			t.Fatal("a sleeping zone denied")
		}
	}
	if TakeAt(z, "a", now).Allowed {
		t.Fatal("a woken zone lost its count")
	}
	if z.Stats().Asleep || !waitFor(func() bool { return atomic.LoadInt32(&woken) == 1 }) {
		t.Fatal("a new key did not wake the zone")
	}
	// Keys in other shards wake nothing more.
	for i := 0; i < 100; i++ {
		TakeAt(z, "k"+string(rune('a'+i%26))+string(rune('a'+i/26)), now)
	}
	// Kept busy, it stays awake; left alone, it sleeps again.
	for end := time.Now().Add(700 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		TakeAt(z, "busy", time.Now())
		if z.Stats().Asleep {
			t.Fatal("a zone in use went to sleep")
		}
	}
	if !waitFor(z.asleepNow) || atomic.LoadInt32(&woken) != 1 {
		t.Fatalf("the zone did not sleep again (woken %d times)", woken)
	}
	if !waitFor(func() bool { return runtime.NumGoroutine() <= before }) {
		t.Errorf("goroutines: %d before, %d with the zone asleep again", before, runtime.NumGoroutine())
	}
}

// The host may refuse: the zone then stays awake and asks again.
func TestZoneSleepRefused(t *testing.T) {
	var asked int32
	z, err := NewZone("awake", Rule{Window: 200 * time.Millisecond, Limit: 2}, Options{
		SweepInterval: MinSweepInterval,
		SleepAfter:    200 * time.Millisecond,
		Sleep:         func(*Zone) bool { return atomic.AddInt32(&asked, 1) > 3 },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if !waitFor(z.asleepNow) || atomic.LoadInt32(&asked) != 4 {
		t.Fatalf("asked %d times, asleep %v", asked, z.Stats().Asleep)
	}
}

// A zone whose summary of evicted keys still counts does not sleep: a
// host that dropped it would hand those keys a fresh budget.
func TestZoneSleepWaitsForEvictedCounts(t *testing.T) {
	rule := Rule{Window: time.Hour, Limit: 5}
	z, err := NewZone("evicting", rule, Options{MaxKeys: 1, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UnixNano()
	TakeAt(z, "a", time.Unix(0, t0))
	TakeAt(z, "b", time.Unix(0, t0)) // evicts a, which still counts, into the sketch
	s := &z.shards[0]
	s.Lock()
	s.remove(z.hash("b"))
	s.Unlock()
	if z.Len() != 0 {
		t.Fatal("setup: keys left")
	}
	if z.empty(t0) || z.sleep(t0) {
		t.Fatal("a zone with live evicted counts would sleep")
	}
	later := t0 + int64(2*time.Hour)
	if !z.empty(later) || !z.sleep(later) {
		t.Fatal("a zone whose evicted counts are over does not sleep")
	}
}
