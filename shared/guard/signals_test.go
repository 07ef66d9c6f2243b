package guard

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestSignals: the guard's word (Signals) is 0 exactly while its denial
// cache is empty and its breaker closed, through a denial cached and
// expired, the breaker opened and closed, and both at once.
func TestSignals(t *testing.T) {
	z := newZone(t, "s", ratelimit.Rule{Window: time.Minute, Limit: 5})
	remote := &fakeRemote{}
	var up int32 // what the probe finds
	g := newGuard(t, remote, Options{
		Probe: func(context.Context) error {
			if atomic.LoadInt32(&up) == 1 {
				return nil
			}
			return errors.New("still down")
		},
		ProbeInterval: time.Hour, // the test probes by hand
	})
	word := Signals(g)
	check := func(step string, want bool) {
		t.Helper()
		if got := atomic.LoadInt64(word) != 0; got != want {
			t.Fatalf("%s: word %d, want set %v (stats %+v)", step, atomic.LoadInt64(word), want, g.Stats())
		}
	}
	ctx := context.Background()
	out := make([]ratelimit.Decision, 1)
	take := func(key string, at time.Duration) {
		g.Take(ctx, epoch.Add(at), []ratelimit.Item{{Zone: z, Key: key}}, out)
	}
	check("new", false)
	remote.set(nil, time.Second)
	take("a", 0)
	take("b", 0)
	check("two denials cached", true)
	remote.set(nil, 0)
	take("a", 2*time.Second)
	check("one denial expired", true)
	take("b", 2*time.Second)
	check("both expired", false)

	remote.set(errors.New("i/o timeout"), 0)
	take("a", 3*time.Second)
	check("breaker open", true)
	atomic.StoreInt32(&up, 1)
	if !g.breaker.probeOnce() {
		t.Fatal("a good probe left the breaker open")
	}
	check("breaker closed", false)

	remote.set(nil, time.Second)
	take("c", 4*time.Second)
	atomic.StoreInt32(&up, 0)
	remote.set(errors.New("i/o timeout"), 0)
	take("d", 4*time.Second)
	check("a denial and the breaker open", true)
	atomic.StoreInt32(&up, 1)
	g.breaker.probeOnce()
	check("a denial, the breaker closed", true)
	remote.set(nil, 0)
	take("c", 6*time.Second)
	check("all clear", false)
	if st := g.Stats(); st.Open || st.Denials != 0 {
		t.Fatalf("stats %+v, want the breaker closed and no denial", st)
	}
}
