package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// banRule is the example: 3 requests per 2 s.
var banRule = ratelimit.Rule{Window: 2 * time.Second, SubWindow: 200 * time.Millisecond, Limit: 3}

// TestRedisBan: limit 3 per 2 s, ban 6 s, on miniredis and a real
// redis-server, with two stores (two instances) on one Redis. The 4th
// request, on the first instance, starts the ban; 3 s later the second
// instance refuses the key until the ban's end though the window alone
// admits it; Inspect shows the ban, Forget (the admin API's DELETE) lifts
// it, and after 6 s the key is served.
func TestRedisBan(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			addr := b.start(t)
			one, _ := newStore(t, addr)
			two, _ := newStore(t, addr)
			one.callerTime, two.callerTime = true, true
			z := newZone(t, "login", banRule, ratelimit.Options{Ban: 6 * time.Second})
			twin := newZone(t, "twin", banRule)
			for i := 1; i <= 3; i++ {
				if d := take1(t, one, epoch, z, "k"); !d.Allowed {
					t.Fatalf("request %d refused: %+v", i, d)
				}
				take1(t, one, epoch, twin, "k")
			}
			d := take1(t, one, epoch, z, "k")
			if d.Allowed || d.RetryAfter != 6*time.Second || d.ResetAfter != 6*time.Second || d.Remaining != 0 {
				t.Fatalf("4th request: got %+v, want refused for the 6s ban", d)
			}
			if z.Bans() != 1 {
				t.Fatalf("Bans() = %d, want 1", z.Bans())
			}
			later := epoch.Add(3 * time.Second)
			if d := take1(t, two, later, twin, "k"); !d.Allowed {
				t.Fatalf("the window alone refuses at 3s (%+v): the test proves nothing", d)
			}
			d = take1(t, two, later, z, "k")
			if d.Allowed || d.RetryAfter != 3*time.Second || d.ResetAfter != 3*time.Second {
				t.Fatalf("the other instance at 3s: got %+v, want refused until the ban's end", d)
			}
			if z.Bans() != 1 {
				t.Fatalf("Bans() = %d, want 1: a refusal inside a ban starts none", z.Bans())
			}
			if d := take1(t, two, epoch.Add(6*time.Second-time.Microsecond), z, "k"); d.Allowed {
				t.Fatalf("served 1µs before the ban's end: %+v", d)
			}
			if d := take1(t, one, epoch.Add(6*time.Second), z, "k"); !d.Allowed {
				t.Fatalf("at 6s: got %+v, want served", d)
			}

			// A second ban, lifted by a reset.
			at := epoch.Add(10 * time.Second)
			for i := 0; i < 4; i++ {
				take1(t, one, at, z, "j")
			}
			ctx := context.Background()
			st, err := two.Inspect(ctx, z, "j", at.Add(time.Second))
			if err != nil || st.BannedFor != 5*time.Second || st.Remaining != 0 {
				t.Fatalf("Inspect: %+v, %v; want banned for 5s", st, err)
			}
			if ok, err := two.Forget(ctx, z, "j", at.Add(time.Second), 0); err != nil || !ok {
				t.Fatalf("Forget = %v, %v; want true", ok, err)
			}
			if st, err := one.Inspect(ctx, z, "j", at.Add(time.Second)); err != nil || st.BannedFor != 0 {
				t.Fatalf("Inspect after Forget: %+v, %v; want no ban", st, err)
			}
			if d := take1(t, one, at.Add(time.Second), z, "j"); !d.Allowed {
				t.Fatalf("after Forget: %+v, want served", d)
			}
		})
	}
}

// TestRedisBanKey: the ban lives in its own key beside the count's, in
// the same Cluster hash slot, holding the ban's end and expiring then; a
// zone without a ban writes none.
func TestRedisBanKey(t *testing.T) {
	s := redistest.Start(t)
	store, client := newStore(t, s.Addr())
	z := newZone(t, "login", banRule, ratelimit.Options{Ban: time.Hour})
	plain := newZone(t, "api", banRule)
	for i := 0; i < 4; i++ {
		take1(t, store, time.Time{}, z, "203.0.113.7")
		take1(t, store, time.Time{}, plain, "203.0.113.7")
	}
	ctx := context.Background()
	key := BanKey("t:", "login", "203.0.113.7")
	if key != "t:login:{203.0.113.7}:ban" || HashTag(key) != HashTag(Key("t:", "login", "203.0.113.7")) {
		t.Fatalf("ban key %q: not beside its count's key", key)
	}
	ttl, err := client.Do(ctx, "PTTL", key)
	if err != nil || ttl.Int <= time.Hour.Milliseconds()-5000 || ttl.Int > time.Hour.Milliseconds()+1 {
		t.Fatalf("PTTL %s = %d, %v; want about an hour", key, ttl.Int, err)
	}
	if n, err := client.Do(ctx, "EXISTS", BanKey("t:", "api", "203.0.113.7")); err != nil || n.Int != 0 {
		t.Fatalf("a zone without a ban wrote a ban key: %d, %v", n.Int, err)
	}
	// Redis losing the ban key lifts the ban: once the window admits,
	// the key is served.
	timed, _ := newStore(t, s.Addr())
	timed.callerTime = true
	for i := 0; i < 4; i++ {
		take1(t, timed, epoch, z, "j")
	}
	if _, err := client.Do(ctx, "DEL", BanKey("t:", "login", "j")); err != nil {
		t.Fatal(err)
	}
	if d := take1(t, timed, epoch.Add(3*time.Second), z, "j"); !d.Allowed {
		t.Fatalf("after the ban key went: %+v, want served by the window", d)
	}
}

// TestRedisBanCluster: on a three-master Cluster the ban key lands in its
// count's slot, so that one script call decides both.
func TestRedisBanCluster(t *testing.T) {
	client := newClient(t, resp.Options{Addrs: redistest.Cluster(t), ReadTimeout: 2 * time.Second})
	store, err := New(client, Settings{KeyPrefix: "t:", Cluster: true, CallerTime: true})
	if err != nil {
		t.Fatal(err)
	}
	z := newZone(t, "login", banRule, ratelimit.Options{Ban: 6 * time.Second})
	for _, key := range []string{"a", "b", "c", "d"} {
		for i := 0; i < 3; i++ {
			take1(t, store, epoch, z, key)
		}
		if d := take1(t, store, epoch, z, key); d.Allowed || d.RetryAfter != 6*time.Second {
			t.Fatalf("key %s: 4th request %+v, want the 6s ban", key, d)
		}
		if d := take1(t, store, epoch.Add(3*time.Second), z, key); d.Allowed || d.RetryAfter != 3*time.Second {
			t.Fatalf("key %s at 3s: %+v, want banned", key, d)
		}
	}
}
