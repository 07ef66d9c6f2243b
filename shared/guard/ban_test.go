package guard

import (
	"context"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestGuardDenyCacheBan: a denial of a zone with a ban, an hour, is
// answered locally for at most banRecheck, with the ban's Retry-After;
// then the store is asked again, so that a reset through another
// instance lifts the ban here within a second.
func TestGuardDenyCacheBan(t *testing.T) {
	z := newZone(t, "login", ratelimit.Rule{Window: time.Minute, Limit: 10}, ratelimit.Options{Ban: time.Hour})
	remote := &fakeRemote{deny: time.Hour}
	g := newGuard(t, remote, Options{})
	out := make([]ratelimit.Decision, 1)
	items := []ratelimit.Item{{Zone: z, Key: "k"}}
	g.Take(context.Background(), epoch, items, out)
	remote.set(nil, 0) // lifted elsewhere
	half := epoch.Add(banRecheck / 2)
	if allowed, _ := g.Take(context.Background(), half, items, out); allowed || out[0].RetryAfter != time.Hour-banRecheck/2 {
		t.Fatalf("within banRecheck: allowed %v, %+v; want the cached ban", allowed, out[0])
	}
	if allowed, _ := g.Take(context.Background(), epoch.Add(banRecheck), items, out); !allowed || remote.count() != 2 {
		t.Fatalf("after banRecheck: allowed %v, store asked %d times; want the store's answer", allowed, remote.count())
	}
}
