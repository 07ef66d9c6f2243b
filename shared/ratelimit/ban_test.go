package ratelimit

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// banRule is the example: 3 requests per 2 s.
var banRule = Rule{Window: 2 * time.Second, SubWindow: 200 * time.Millisecond, Limit: 3}

// banTakes are the ways a host decides one request of a zone with a ban:
// TakeBanAt (Traefik's memory path through the store) and TakeAll, alone
// and as a reservation (count_status).
var banTakes = map[string]func(z *Zone, key string, now time.Time) Decision{
	"TakeBanAt": func(z *Zone, key string, now time.Time) Decision {
		return TakeBanAt(z, key, now, 0)
	},
	"TakeAll": func(z *Zone, key string, now time.Time) Decision {
		out := make([]Decision, 1)
		TakeAll(now, []Item{{Zone: z, Key: key}}, out)
		return out[0]
	},
	"TakeAll-reserved": func(z *Zone, key string, now time.Time) Decision {
		out := make([]Decision, 1)
		TakeAll(now, []Item{{Zone: z, Key: key, Refundable: true}}, out)
		return out[0]
	},
}

// TestBanOutlivesTheWindow: limit 3 per 2 s, ban 6 s. The 4th request is
// refused and starts the ban; 3 s later the window alone admits (a twin
// zone without a ban shows it), the ban refuses, with Retry-After and the
// reset at the ban's end; at 6 s the key is served again.
func TestBanOutlivesTheWindow(t *testing.T) {
	for name, take := range banTakes {
		t.Run(name, func(t *testing.T) {
			z := newZone(t, "login", banRule, Options{Ban: 6 * time.Second})
			twin := newZone(t, "twin", banRule)
			for i := 1; i <= 3; i++ {
				if d := take(z, "k", epoch); !d.Allowed {
					t.Fatalf("request %d refused: %+v", i, d)
				}
				TakeAt(twin, "k", epoch)
			}
			d := take(z, "k", epoch)
			if d.Allowed || d.RetryAfter != 6*time.Second || d.ResetAfter != 6*time.Second || d.Remaining != 0 {
				t.Fatalf("4th request: got %+v, want refused for the 6s ban", d)
			}
			if z.Bans() != 1 {
				t.Fatalf("Bans() = %d, want 1", z.Bans())
			}
			later := epoch.Add(3 * time.Second)
			if d := TakeAt(twin, "k", later); !d.Allowed {
				t.Fatalf("the window alone refuses at 3s (%+v): the test proves nothing", d)
			}
			d = take(z, "k", later)
			if d.Allowed || d.RetryAfter != 3*time.Second || d.ResetAfter != 3*time.Second {
				t.Fatalf("at 3s: got %+v, want refused until the ban's end, 3s on", d)
			}
			if d := take(z, "k", epoch.Add(6*time.Second-time.Nanosecond)); d.Allowed {
				t.Fatalf("served 1ns before the ban's end: %+v", d)
			}
			if d := take(z, "k", epoch.Add(6*time.Second)); !d.Allowed {
				t.Fatalf("at 6s: got %+v, want served", d)
			}
			if z.Bans() != 1 {
				t.Fatalf("Bans() = %d after the ban, want 1: refusals inside a ban start none", z.Bans())
			}
			if d := take(z, "other", epoch.Add(3*time.Second)); !d.Allowed {
				t.Fatalf("another key refused: %+v", d)
			}
		})
	}
}

// TestBanOnlyForItsKey: a request checked against a ban zone and another
// is refused while the key is banned, and counts in neither; a ban starts
// only on the zone whose own window refused the key.
func TestBanWithOtherZones(t *testing.T) {
	z := newZone(t, "login", banRule, Options{Ban: 6 * time.Second})
	other := newZone(t, "site", Rule{Window: time.Minute, Limit: 1000})
	items := []Item{{Zone: other, Key: "k"}, {Zone: z, Key: "k"}}
	out := make([]Decision, 2)
	for i := 0; i < 3; i++ {
		if !TakeAll(epoch, items, out) {
			t.Fatalf("request %d refused: %+v", i+1, out)
		}
	}
	if TakeAll(epoch, items, out) || out[1].RetryAfter != 6*time.Second {
		t.Fatalf("4th: got %+v, want refused by the ban zone for 6s", out)
	}
	if TakeAll(epoch.Add(3*time.Second), items, out) || out[1].RetryAfter != 3*time.Second {
		t.Fatalf("at 3s: got %+v, want banned", out)
	}
	if st := other.Inspect("k", epoch.Add(3*time.Second)); st.Count != 3 {
		t.Fatalf("the other zone counts %d, want 3: refused requests count nowhere", st.Count)
	}

	// A key refused by the other zone alone is not banned by this one.
	tight := newZone(t, "tight", Rule{Window: time.Minute, Limit: 1})
	items = []Item{{Zone: tight, Key: "j"}, {Zone: z, Key: "j"}}
	TakeAll(epoch, items, out)
	if TakeAll(epoch, items, out) || !out[1].Allowed {
		t.Fatalf("got %+v, want refused by the tight zone only", out)
	}
	if st := z.Inspect("j", epoch); st.BannedFor != 0 {
		t.Fatalf("banned for %v by another zone's refusal", st.BannedFor)
	}
}

// TestBanInspectAndForget: Inspect shows how long a key stays banned, and
// Forget (an operator's reset) lifts the ban with the count.
func TestBanInspectAndForget(t *testing.T) {
	z := newZone(t, "login", banRule, Options{Ban: time.Hour})
	for i := 0; i < 4; i++ {
		TakeBanAt(z, "k", epoch, 0)
	}
	st := z.Inspect("k", epoch.Add(time.Minute))
	if st.BannedFor != 59*time.Minute || st.Remaining != 0 {
		t.Fatalf("Inspect: got %+v, want banned for 59m, nothing remaining", st)
	}
	if !z.Forget("k") {
		t.Fatal("Forget reported no key")
	}
	if st := z.Inspect("k", epoch.Add(time.Minute)); st.BannedFor != 0 {
		t.Fatalf("after Forget: %+v, want no ban", st)
	}
	if d := TakeBanAt(z, "k", epoch.Add(time.Minute), 0); !d.Allowed {
		t.Fatalf("after Forget: %+v, want served", d)
	}
}

// TestBanSurvivesKeyFlood: bans live apart from the keys' slots: a flood
// of fresh keys that evicts the banned key's counts leaves its ban.
func TestBanSurvivesKeyFlood(t *testing.T) {
	z := newZone(t, "login", banRule, Options{Ban: time.Hour, MaxKeys: 64})
	for i := 0; i < 4; i++ {
		TakeBanAt(z, "victim", epoch, 0)
	}
	for i := 0; i < 10000; i++ {
		TakeBanAt(z, "flood-"+strconv.Itoa(i), epoch.Add(time.Duration(i)*time.Millisecond), 0)
	}
	at := epoch.Add(30 * time.Second)
	if d := TakeBanAt(z, "victim", at, 0); d.Allowed || d.RetryAfter != time.Hour-30*time.Second {
		t.Fatalf("after the flood: %+v, want still banned", d)
	}
}

// TestBanTableBounded: a zone holds at most MaxKeys bans; a full one
// keeps the bans it holds and bans no one more until one ends: the keys
// it could not ban are still refused by their windows.
func TestBanTableBounded(t *testing.T) {
	z := newZone(t, "login", Rule{Window: time.Hour, Limit: 1}, Options{Ban: 2 * time.Hour, MaxKeys: 16})
	for i := 0; i < 1000; i++ {
		at := epoch.Add(time.Duration(i) * time.Millisecond).UnixNano()
		key := "k" + strconv.Itoa(i)
		TakeBanAt(z, key, time.Unix(0, at), 0)
		if d := TakeBanAt(z, key, time.Unix(0, at), 0); d.Allowed {
			t.Fatalf("key %d: second request admitted", i)
		}
	}
	bans := 0
	for i := range z.shards {
		bans += len(z.shards[i].banned)
	}
	if bans != 16 || z.Bans() != 16 {
		t.Fatalf("%d bans held, %d started, want MaxKeys, 16", bans, z.Bans())
	}
	at := epoch.Add(90 * time.Minute).UnixNano() // every window is over
	if d := TakeBanAt(z, "k0", time.Unix(0, at), 0); d.Allowed {
		t.Fatalf("the first ban was pushed out by the others: %+v", d)
	}
	if d := TakeBanAt(z, "k999", epoch.Add(2*time.Second), 0); d.Allowed {
		t.Fatalf("a key the full table could not ban got a fresh budget: %+v", d)
	}
	// Once the bans end, the table takes new ones.
	end := epoch.Add(3 * time.Hour).UnixNano()
	TakeBanAt(z, "late", time.Unix(0, end), 0)
	if d := TakeBanAt(z, "late", time.Unix(0, end), 0); d.RetryAfter != 2*time.Hour {
		t.Fatalf("after the bans ended: %+v, want a new 2h ban", d)
	}
}

// TestBanOptions: a negative or too long ban is refused and named; the
// ID of a zone without a ban is what it was, one with a ban another.
func TestBanOptions(t *testing.T) {
	for _, ban := range []time.Duration{-time.Second, MaxBan + time.Second} {
		_, err := NewZone("z", banRule, Options{Ban: ban})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != FieldBan {
			t.Errorf("ban %v: got %v, want a FieldError naming Ban", ban, err)
		}
	}
	r := banRule
	if err := r.Normalize(); err != nil {
		t.Fatal(err)
	}
	if ZoneID("z", r, Options{}) == ZoneID("z", r, Options{Ban: time.Minute}) {
		t.Fatal("a ban does not change the zone's ID")
	}
	if id := ZoneID("z", r, Options{}); id != `"z" window=2000000000 sub_window=200000000 limit=3 cost=1 algorithm=sliding max_keys=100000 sweep_interval=2000000000` {
		t.Fatalf("the ID of a zone without a ban changed: %s", id)
	}
}

// TestBanKeepsZoneAwake: a zone holding a ban does not sleep, which
// would drop it with the zone.
func TestBanKeepsZoneAwake(t *testing.T) {
	z := newZone(t, "login", banRule, Options{Ban: time.Hour})
	for i := 0; i < 4; i++ {
		TakeBanAt(z, "k", epoch, 0)
	}
	later := epoch.Add(time.Minute).UnixNano() // the window is over
	z.sweepAll(time.Unix(0, later))
	if z.empty(later) {
		t.Fatal("a zone holding a live ban counts as empty")
	}
	z.sweepAll(epoch.Add(2 * time.Hour))
	if !z.empty(epoch.Add(2 * time.Hour).UnixNano()) {
		t.Fatal("an ended ban keeps the zone awake")
	}
}

// TestBanConcurrent: 200 requests of one key at once, limit 3 and a ban:
// 3 admitted, one ban started, every other request refused; then 200 more
// at once, all refused by the ban.
func TestBanConcurrent(t *testing.T) {
	z := newZone(t, "login", banRule, Options{Ban: time.Hour})
	for round, want := range []int64{3, 0} {
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if TakeBanAt(z, "k", epoch.Add(time.Duration(round)*time.Second), 0).Allowed {
					admitted.Add(1)
				}
			}()
		}
		wg.Wait()
		if admitted.Load() != want || z.Bans() != 1 {
			t.Fatalf("round %d: %d admitted, %d bans; want %d and 1", round, admitted.Load(), z.Bans(), want)
		}
	}
}
