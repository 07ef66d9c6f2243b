package guard

import (
	"context"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestGuardDenyCacheLimit: a denial cached under one limit does not
// answer for the key under another.
func TestGuardDenyCacheLimit(t *testing.T) {
	z := newZone(t, "a", ratelimit.Rule{Window: time.Minute, Limit: 10})
	remote := &fakeRemote{deny: 3 * time.Second}
	g := newGuard(t, remote, Options{})
	out := make([]ratelimit.Decision, 1)
	g.Take(context.Background(), epoch, []ratelimit.Item{{Zone: z, Key: "k"}}, out)
	remote.set(nil, 0)
	if allowed, _ := g.Take(context.Background(), epoch, []ratelimit.Item{{Zone: z, Key: "k"}}, out); allowed {
		t.Fatal("the cached denial did not hold under the same limit")
	}
	if allowed, _ := g.Take(context.Background(), epoch, []ratelimit.Item{{Zone: z, Key: "k", Limit: 600}}, out); !allowed {
		t.Fatalf("under limit 600: allowed %v, %+v; the denial under 10 answered", allowed, out[0])
	}
}

// TestForgetDenialEveryLimit: the admin API's reset forgets a key's
// cached denials under its override's limit too.
func TestForgetDenialEveryLimit(t *testing.T) {
	z := newZone(t, "a", ratelimit.Rule{Window: time.Minute, Limit: 10})
	remote := &fakeRemote{deny: 3 * time.Second}
	g := newGuard(t, remote, Options{})
	out := make([]ratelimit.Decision, 1)
	for _, n := range []int64{0, 600} {
		g.Take(context.Background(), epoch, []ratelimit.Item{{Zone: z, Key: "k", Limit: n}}, out)
	}
	if g.denials.len() != 2 {
		t.Fatalf("%d cached denials, want 2", g.denials.len())
	}
	g.ForgetDenial(z, "k")
	if n := g.denials.len(); n != 0 {
		t.Fatalf("%d cached denials left after ForgetDenial, want 0", n)
	}
}
