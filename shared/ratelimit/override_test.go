package ratelimit

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// takeN decides one request of key under limit (0: the rule's) in s.
func takeN(t *testing.T, s Store, now time.Time, z *Zone, key string, limit int64) Decision {
	t.Helper()
	out := make([]Decision, 1)
	if _, err := s.Take(context.Background(), now, []Item{{Zone: z, Key: key, Limit: limit}}, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// checkTiers takes key under the rule's limit 2 until denied, then under
// 5: the count is kept (3 more, not 5), the decisions show the limit
// that applied, and the denial under 2 does not answer for 5.
func checkTiers(t *testing.T, s Store, z *Zone, now time.Time) {
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
		t.Fatalf("sixth request under limit 5: %+v, want denied (the count kept)", d)
	}
	if d := takeN(t, s, now, z, "k", 0); d.Allowed || d.Limit != 2 || d.Remaining != 0 {
		t.Fatalf("back under limit 2: %+v, want denied with limit 2", d)
	}
	// Another key under the rule's limit is unaffected.
	if d := takeN(t, s, now, z, "other", 0); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("other key: %+v", d)
	}
}

// TestItemLimitMemory: a key's count does not depend on its limit, in
// every algorithm, and the shard's denial cache holds only for the limit
// it was decided under.
func TestItemLimitMemory(t *testing.T) {
	for _, alg := range []Algorithm{Sliding, Strict, Fixed, Log} {
		t.Run(alg.String(), func(t *testing.T) {
			z := newZone(t, "tiers", Rule{Window: time.Minute, Limit: 2, Algorithm: alg})
			checkTiers(t, Memory{}, z, epoch)
		})
	}
}

// TestItemLimitTakeAll: several items, each under its own limit, in one
// request.
func TestItemLimitTakeAll(t *testing.T) {
	a := newZone(t, "a", Rule{Window: time.Minute, Limit: 1})
	b := newZone(t, "b", Rule{Window: time.Minute, Limit: 1})
	out := make([]Decision, 2)
	items := []Item{{Zone: a, Key: "k", Limit: 3}, {Zone: b, Key: "k"}}
	if !TakeAll(epoch, items, out) || out[0].Limit != 3 || out[0].Remaining != 2 || out[1].Limit != 1 {
		t.Fatalf("first: %+v", out)
	}
	items[1].Limit = 2
	if !TakeAll(epoch, items, out) || out[0].Remaining != 1 || out[1].Limit != 2 || out[1].Remaining != 0 {
		t.Fatalf("second: %+v", out)
	}
	if TakeAll(epoch, items, out) || out[1].Allowed || !out[0].Allowed {
		t.Fatalf("third: %+v, want b denied", out)
	}
}

// TestItemLimitLogTiers: a Log key counted under a high limit, then
// decided under a low one and a higher one, keeps a sane ring.
func TestItemLimitLogTiers(t *testing.T) {
	z := newZone(t, "log", Rule{Window: time.Minute, Limit: 2, Algorithm: Log})
	for i := 0; i < 6; i++ {
		if d := takeN(t, Memory{}, epoch, z, "k", 8); !d.Allowed {
			t.Fatalf("take %d under limit 8: %+v", i, d)
		}
	}
	if d := takeN(t, Memory{}, epoch, z, "k", 0); d.Allowed || d.Remaining != 0 {
		t.Fatalf("under limit 2 after 6: %+v", d)
	}
	if d := takeN(t, Memory{}, epoch, z, "k", 7); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("under limit 7 after 6: %+v", d)
	}
	if d := takeN(t, Memory{}, epoch, z, "k", 4); d.Allowed {
		t.Fatalf("under limit 4 after 7: %+v", d)
	}
}

// TestLogEvictedKeepsOwnLimit: a Log key at its own limit, above the
// rule's, that is evicted comes back with its whole count, not the
// rule's limit of it: a tier of 100 at its limit stays denied.
func TestLogEvictedKeepsOwnLimit(t *testing.T) {
	z := newZone(t, "log", Rule{Window: time.Minute, Limit: 5, Algorithm: Log}, Options{MaxKeys: 1, SweepInterval: -1})
	for i := 0; i < 100; i++ {
		if d := takeN(t, Memory{}, epoch, z, "tier", 100); !d.Allowed {
			t.Fatalf("take %d: %+v", i, d)
		}
	}
	takeN(t, Memory{}, epoch, z, "other", 0) // evicts tier
	if n := z.Len(); n != 1 {
		t.Fatalf("zone holds %d keys, want 1", n)
	}
	admitted := 0
	for i := 0; i < 100; i++ {
		if takeN(t, Memory{}, epoch.Add(time.Second), z, "tier", 100).Allowed {
			admitted++
		}
	}
	if admitted != 0 {
		t.Fatalf("the evicted tier key was admitted %d more times in its window, want 0", admitted)
	}
}

// TestOverrides: a key override matches the key exactly; a CIDR (or a
// single address) matches the client address, unmapped, by the narrowest
// CIDR, and never the key, whatever it spells.
func TestOverrides(t *testing.T) {
	r := Rule{Window: time.Minute, Limit: 10}
	if err := r.Normalize(); err != nil {
		t.Fatal(err)
	}
	o, err := NewOverrides(r, []Override{
		{Key: "gold-key", Limit: 600},
		{Key: "10.0.0.0/8", Limit: Unlimited},
		{Key: "10.1.0.0/16", Limit: 20},
		{Key: "2001:db8::/32", Limit: 30},
		{Key: "192.0.2.7", Limit: 40},
		{Key: "::1", Limit: 50},
		{Key: "::ffff:198.51.100.0/120", Limit: 60},
		{Key: "fe80::/10", Limit: 70},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !o.HasCIDRs() || o.Len() != 8 {
		t.Fatalf("HasCIDRs %v, Len %d; want true, 8", o.HasCIDRs(), o.Len())
	}
	var none netip.Addr
	for _, c := range []struct {
		key    string
		client netip.Addr
		limit  int64
		ok     bool
	}{
		{"gold-key", none, 600, true},
		{"gold-key", netip.MustParseAddr("10.2.3.4"), 600, true}, // the key first
		{"silver-key", none, 0, false},
		{"silver-key", netip.MustParseAddr("10.2.3.4"), Unlimited, true},
		{"", netip.MustParseAddr("10.1.3.4"), 20, true}, // the narrowest CIDR
		{"k", netip.MustParseAddr("::ffff:10.2.3.4"), Unlimited, true},
		{"k", netip.MustParseAddr("2001:db8:1:2::5"), 30, true},
		{"k", netip.MustParseAddr("192.0.2.7"), 40, true},
		{"k", netip.MustParseAddr("192.0.2.8"), 0, false},
		{"k", netip.MustParseAddr("11.0.0.1"), 0, false},
		{"k", netip.MustParseAddr("::1"), 50, true},
		{"k", netip.MustParseAddr("::"), 0, false},
		{"k", netip.MustParseAddr("fe80::1%eth0"), 70, true}, // without its zone
		{"k", netip.MustParseAddr("198.51.100.9"), 60, true}, // a mapped CIDR holds IPv4
		// Keys that spell addresses or CIDRs inside them: no match.
		{"10.2.3.4", none, 0, false},
		{"10.2.3.4", netip.MustParseAddr("203.0.113.7"), 0, false},
		{"::ffff:10.2.3.4", none, 0, false},
		{"10.0.0.0/8", none, 0, false},
		{"2001:db8:1:2::/64", none, 0, false},
		{"192.0.2.7", none, 0, false},
		{"::1", none, 0, false},
	} {
		if n, ok := o.Match(c.key, c.client); n != c.limit || ok != c.ok {
			t.Errorf("Match(%q, %v) = %d, %v; want %d, %v", c.key, c.client, n, ok, c.limit, c.ok)
		}
	}
	keys, err := NewOverrides(r, []Override{{Key: "gold-key", Limit: 600}})
	if err != nil {
		t.Fatal(err)
	}
	if keys.HasCIDRs() {
		t.Error("HasCIDRs without a CIDR")
	}
	mapped, v6 := netip.MustParseAddr("::ffff:10.2.3.4"), netip.MustParseAddr("2001:db8::1")
	if n := testing.AllocsPerRun(100, func() {
		o.Match("silver-key", none)
		o.Match("silver-key", mapped)
		o.Match("beef:cafe", v6)
	}); n != 0 {
		t.Errorf("Match allocates %v times", n)
	}
}

// TestOverridesIPv6ByAddress: a CIDR matches an IPv6 client by its own
// address, never by the /64 that groups its key.
func TestOverridesIPv6ByAddress(t *testing.T) {
	r := Rule{Window: time.Minute, Limit: 10}
	if err := r.Normalize(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cidr string
		ok   bool
	}{{"::1", true}, {"::1/128", true}, {"::/128", false}, {"::/64", true}} {
		o, err := NewOverrides(r, []Override{{Key: c.cidr, Limit: Unlimited}})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := o.Match("::/64", netip.MustParseAddr("::1")); ok != c.ok {
			t.Errorf("%s, client ::1 (key ::/64): matched %v, want %v", c.cidr, ok, c.ok)
		}
	}
}

func TestOverridesErrors(t *testing.T) {
	r := Rule{Window: time.Minute, Limit: 10, Cost: 2}
	logRule := Rule{Window: time.Minute, Limit: 10, Algorithm: Log}
	for _, r := range []*Rule{&r, &logRule} {
		if err := r.Normalize(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		rule Rule
		ovs  []Override
		want string
	}{
		{r, []Override{{Key: "10.0.0.0/33", Limit: 5}}, "bad CIDR"},
		{r, []Override{{Key: "10.0.0.1/8", Limit: 5}}, "did you mean 10.0.0.0/8"},
		{r, []Override{{Key: "a", Limit: 0}}, "positive integer"},
		{r, []Override{{Key: "a", Limit: 1}}, "below the cost 2"},
		{r, []Override{{Key: "a", Limit: 5}, {Key: "a", Limit: 6}}, "given twice"},
		{r, []Override{{Key: "10.0.0.0/8", Limit: 5}, {Key: "::ffff:10.0.0.0/104", Limit: 6}}, "given twice"},
		{logRule, []Override{{Key: "a", Limit: 2000}}, "too large for the log algorithm"},
		{r, []Override{{Key: "", Limit: 5}}, "empty key"},
	} {
		if _, err := NewOverrides(c.rule, c.ovs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.ovs, err, c.want)
		}
	}
	for _, s := range []string{"0", "-1", "unlimted", "Unlimited", "1.5", ""} {
		if _, err := ParseOverrideLimit(s); err == nil {
			t.Errorf("ParseOverrideLimit(%q) accepted", s)
		}
	}
	if n, err := ParseOverrideLimit("unlimited"); err != nil || n != Unlimited {
		t.Errorf("unlimited: %d, %v", n, err)
	}
}
