// Package zonetest holds the zone helpers that the tests of the packages
// around shared/ratelimit share. (shared/ratelimit's own tests keep their
// copy: a package's tests cannot import a package that imports it.)
package zonetest

import (
	"context"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Epoch is a fixed time the tests decide at, with microseconds, so that a
// store's clock in whole microseconds and the caller's agree.
var Epoch = time.UnixMicro(1_760_000_000_123_457)

// NewZone returns the zone name of rule r, closed when the test ends. It
// has no sweeper unless opts, given at most once, set a SweepInterval.
func NewZone(t testing.TB, name string, r ratelimit.Rule, opts ...ratelimit.Options) *ratelimit.Zone {
	t.Helper()
	var o ratelimit.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = -1
	}
	z, err := ratelimit.NewZone(name, r, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}

// Take decides one request on key in z through s at now, failing the test
// on an error.
func Take(t testing.TB, s ratelimit.Store, now time.Time, z *ratelimit.Zone, key string) ratelimit.Decision {
	t.Helper()
	out := make([]ratelimit.Decision, 1)
	if _, err := s.Take(context.Background(), now, []ratelimit.Item{{Zone: z, Key: key}}, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}
