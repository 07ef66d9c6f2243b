package ratelimit

import (
	"testing"
	"time"
)

var epoch = time.UnixMicro(1_760_000_000_123_457)

// newZone returns the zone name of rule r, closed when the test ends. It
// has no sweeper unless opts, given at most once, set a SweepInterval.
func newZone(t testing.TB, name string, r Rule, opts ...Options) *Zone {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = -1
	}
	z, err := NewZone(name, r, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}
