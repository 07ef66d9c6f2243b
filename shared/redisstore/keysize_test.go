package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestShapeField: distinct rule shapes get distinct fields, the field is
// negative (never a sub-window cell), and the bench script's literal for
// 60s/6s is right.
func TestShapeField(t *testing.T) {
	seen := map[int64]ratelimit.Rule{}
	for _, t0 := range []time.Duration{time.Microsecond, 999 * time.Microsecond, time.Millisecond, 1500 * time.Millisecond, time.Second, 6 * time.Second, time.Hour, 1000 * time.Hour} {
		for _, k := range []time.Duration{1, 2, 10, 127, ratelimit.MaxBuckets} {
			r := ratelimit.Rule{Window: t0 * k, SubWindow: t0}
			f := shapeField(r)
			if f >= 0 {
				t.Fatalf("%v/%v: field %d is not negative", r.Window, r.SubWindow, f)
			}
			if prev, ok := seen[f]; ok {
				t.Fatalf("%v/%v and %v/%v share field %d", r.Window, r.SubWindow, prev.Window, prev.SubWindow, f)
			}
			seen[f] = r
		}
	}
	if f := shapeField(ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second}); f != -6186 {
		t.Fatalf("60s/6s: field %d, want -6186 (scripts/bench-redis.sh uses it)", f)
	}
	longest := ratelimit.Rule{Window: ratelimit.MaxWindow, SubWindow: ratelimit.MaxWindow / ratelimit.MaxBuckets}
	if err := CheckRule("z", longest); err != nil {
		t.Fatal(err)
	}
	if f := shapeField(longest); f >= 0 {
		t.Fatalf("the longest window overflows: %d", f)
	}
}

// TestRedisBytesPerKey holds the figures docs/redis.md gives for MEMORY USAGE
// of a sliding key with all 11 sub-windows written and a total of 550, so
// 2 bytes per integer. Plain takes keep the lean layout, the head, the
// total and 11 cells, 15 + 12*2 = 39 bytes: within 120 bytes for an IPv4
// key and 136 for an IPv6 /64 key. Reservations (count_status) make it
// full, with the leased units and the 4-byte generation, 45 bytes: within 136
// and 152.
func TestRedisBytesPerKey(t *testing.T) {
	s := redistest.Start(t)
	store, client := newStore(t, s.Addr())
	store.prefix = "rl:"
	store.callerTime = true
	z := newZone(t, "api", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 1000})
	for _, tc := range []struct {
		key        string
		refundable bool
		strlen     int64
		most       int64
	}{
		{"203.0.113.77", false, 15 + 12*2, 120},
		{"2001:db8:1234:5678::/64", false, 15 + 12*2, 136},
		{"203.0.113.78", true, 15 + 13*2 + 4, 136},
		{"2001:db8:1234:5679::/64", true, 15 + 13*2 + 4, 152},
	} {
		for i := 0; i <= 10; i++ {
			for j := 0; j < 50; j++ {
				now := epoch.Add(time.Duration(i) * 6 * time.Second)
				out := make([]ratelimit.Decision, 1)
				if _, err := store.Take(context.Background(), now, []ratelimit.Item{{Zone: z, Key: tc.key, Refundable: tc.refundable}}, out); err != nil || !out[0].Allowed {
					t.Fatalf("take %s: %+v, %v", tc.key, out[0], err)
				}
			}
		}
		rkey := Key("rl:", "api", tc.key)
		ctx := context.Background()
		n, err := client.Do(ctx, "STRLEN", rkey)
		if err != nil || n.Int != tc.strlen {
			t.Fatalf("STRLEN %s = %d, %v; want %d", rkey, n.Int, err, tc.strlen)
		}
		size, err := client.Do(ctx, "MEMORY", "USAGE", rkey)
		if err != nil {
			t.Fatal(err)
		}
		layout := ""
		if tc.refundable {
			layout = " (counted by reservations: the full layout)"
		}
		t.Logf("%s: %d bytes%s", rkey, size.Int, layout)
		if size.Int > tc.most {
			t.Errorf("%s takes %d bytes, want at most %d", rkey, size.Int, tc.most)
		}
	}
}
