package guard

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// A breaker whose guard sees no request for the idle time ends its probe
// and closes: the next request tries the store again, and trips it again
// if the store still fails. The idle timer runs on the wall clock: the
// requests that keep the probe come 20 ms apart, so that only a stall of
// nearly the idle time could end it.
func TestGuardProbeStopsWhenIdle(t *testing.T) {
	z := newZone(t, "idle-probe", ratelimit.Rule{Window: time.Minute, Limit: 5})
	remote := &fakeRemote{err: errors.New("i/o timeout")}
	g := newGuard(t, remote, Options{
		Probe:         func(context.Context) error { return errors.New("still down") },
		ProbeInterval: 20 * time.Millisecond,
	})
	const idle = 500 * time.Millisecond
	g.StopProbeWhenIdle(idle)
	before := runtime.NumGoroutine()
	out := make([]ratelimit.Decision, 1)
	items := []ratelimit.Item{{Zone: z, Key: "k"}}
	g.Take(context.Background(), epoch, items, out)
	if !g.Stats().Open || runtime.NumGoroutine() != before+1 {
		t.Fatal("a failure did not start the probe")
	}
	// Requests keep it probing.
	for end := time.Now().Add(2 * idle); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		g.Take(context.Background(), epoch, items, out)
		if !g.Stats().Open {
			t.Fatal("the probe stopped while requests came")
		}
	}
	if !waitFor(func() bool { return !g.Stats().Open && runtime.NumGoroutine() <= before }) {
		t.Fatalf("idle: open %v, %d goroutines (%d before)", g.Stats().Open, runtime.NumGoroutine(), before)
	}
	calls := remote.count()
	g.Take(context.Background(), epoch, items, out)
	if remote.count() != calls+1 || !g.Stats().Open {
		t.Fatal("the request after the idle probe did not try the store and trip the breaker")
	}
}

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
