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

// takeN decides one request of key under limit (0: the rule's) in s.
func takeN(t *testing.T, s ratelimit.Store, now time.Time, z *ratelimit.Zone, key string, limit int64) ratelimit.Decision {
	t.Helper()
	out := make([]ratelimit.Decision, 1)
	if _, err := s.Take(context.Background(), now, []ratelimit.Item{{Zone: z, Key: key, Limit: limit}}, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// checkTiers takes key under the rule's limit 2 until denied, then under
// 5: the count carries over (3 more, not 5), the decisions show the limit
// that applied, and the denial under 2 does not answer for 5.
func checkTiers(t *testing.T, s ratelimit.Store, z *ratelimit.Zone, now time.Time) {
	t.Helper()
	for i := 0; i < 2; i++ {
		if d := takeN(t, s, now, z, "k", 0); !d.Allowed || d.Limit != 2 {
			t.Fatalf("request %d under the rule's limit: %+v", i+1, d)
		}
	}
	if d := takeN(t, s, now, z, "k", 0); d.Allowed || d.Limit != 2 {
		t.Fatalf("third request under limit 2: %+v, want denied", d)
	}
	// Denied again: a cached denial now exists (memory and guard).
	if d := takeN(t, s, now, z, "k", 0); d.Allowed {
		t.Fatalf("fourth request under limit 2 allowed")
	}
	for i := 0; i < 3; i++ {
		d := takeN(t, s, now, z, "k", 5)
		if !d.Allowed || d.Limit != 5 || d.Remaining != int64(2-i) {
			t.Fatalf("request %d under limit 5: %+v, want allowed with limit 5 and %d remaining", i+1, d, 2-i)
		}
	}
	if d := takeN(t, s, now, z, "k", 5); d.Allowed || d.Limit != 5 {
		t.Fatalf("sixth request under limit 5: %+v, want denied (the count carried over)", d)
	}
	if d := takeN(t, s, now, z, "k", 0); d.Allowed || d.Limit != 2 || d.Remaining != 0 {
		t.Fatalf("back under limit 2: %+v, want denied with limit 2", d)
	}
	// Another key under the rule's limit is unaffected.
	if d := takeN(t, s, now, z, "other", 0); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("other key: %+v", d)
	}
}
