package caddymodule

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestBanCaddyfile: `ban <duration>` in a zone is the JSON field "ban";
// a ban that is not a positive duration, or too long, is refused and
// named, at its line; a misspelling is pointed to it.
func TestBanCaddyfile(t *testing.T) {
	var h Handler
	d := caddyfile.NewTestDispenser("rate_limit {\n\tzone login {\n\t\twindow 15m\n\t\tlimit 5\n\t\tban 1h\n\t}\n}")
	if err := h.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(&h)
	if want := `{"rate_limits":{"login":{"window":900000000000,"limit":5,"ban":3600000000000}}}`; string(got) != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	for _, tc := range []struct{ ban, want string }{
		{"0s", "ban"},
		{"-1s", "ban"},
		{"soon", "ban"},
		{"1h 2h", "wrong argument count"},
		{"", "wrong argument count"},
	} {
		var h Handler
		src := "rate_limit {\n\tzone login {\n\t\twindow 15m\n\t\tlimit 5\n\t\tban " + tc.ban + "\n\t}\n}"
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ":5") {
			t.Errorf("ban %q: got %v, want an error naming %q at line 5", tc.ban, err, tc.want)
		}
	}
	var typo Handler
	err := typo.UnmarshalCaddyfile(caddyfile.NewTestDispenser("rate_limit {\n\tzone login {\n\t\twindow 15m\n\t\tlimit 5\n\t\tbann 1h\n\t}\n}"))
	if err == nil || !strings.Contains(err.Error(), `"ban"`) {
		t.Errorf("bann: got %v, want the fix ban", err)
	}
}

// TestBanProvisionErrors: a JSON ban must be positive, at most a year,
// and on a zone with a window and a limit.
func TestBanProvisionErrors(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{"rate_limits":{"a":{"window":"1m","limit":1,"ban":"-1s"}}}`, `zone "a": ban must be positive`},
		{`{"rate_limits":{"a":{"limit":1,"ban":"1h"}}}`, `zone "a": ban needs a window and a limit`},
		{`{"rate_limits":{"a":{"window":"1m","ban":"1h"}}}`, `zone "a": ban needs a window and a limit`},
		{`{"rate_limits":{"a":{"window":"1m","limit":1,"ban":"9000h"}}}`, `zone "a": ban: 9000h0m0s is too long`},
	} {
		expectProvisionError(t, tc.config, tc.want)
	}
}

// TestBanHeaders: limit 1 per second, ban 1h. The second request is
// refused with Retry-After, X-RateLimit-Reset and the IETF t= at the
// ban's end, an hour, where the window alone says a second; the metric
// counts one ban, and refusals inside it start none.
func TestBanHeaders(t *testing.T) {
	h, ctx := newHandler(t, `{"headers":"both","rate_limits":{"banz":{"window":"1s","sub_window":"100ms","limit":1,"ban":"1h"}}}`)
	reg := ctx.GetMetricsRegistry()
	before := banCount(t, reg, "banz")
	if res := serve(t, h, "203.0.113.9", "/"); !res.passed {
		t.Fatalf("first request refused: %v", res.header)
	}
	for i := 0; i < 3; i++ {
		res := serve(t, h, "203.0.113.9", "/")
		if res.passed || res.status != http.StatusTooManyRequests {
			t.Fatalf("request %d passed", i+2)
		}
		if ra := res.header.Get("Retry-After"); ra != "3600" && ra != "3599" {
			t.Fatalf("Retry-After %q, want the ban's 3600", ra)
		}
		if r := res.header.Get("X-RateLimit-Reset"); r != "3600" && r != "3599" {
			t.Fatalf("X-RateLimit-Reset %q, want the ban's end", r)
		}
		if r := res.header.Get("X-RateLimit-Remaining"); r != "0" {
			t.Fatalf("X-RateLimit-Remaining %q, want 0", r)
		}
		if rl := res.header.Get("RateLimit"); !strings.Contains(rl, "t=3600") && !strings.Contains(rl, "t=3599") {
			t.Fatalf("RateLimit %q, want t= the ban's end", rl)
		}
	}
	if got := banCount(t, reg, "banz") - before; got != 1 {
		t.Fatalf("caddy_http_rate_limit_bans_total{zone=banz} +%v, want +1", got)
	}
	if res := serve(t, h, "203.0.113.10", "/"); !res.passed {
		t.Fatal("another client refused")
	}
}

// TestBanAdminState: the admin API's key state names when a ban ends, and
// the zone's listing its ban.
func TestBanAdminState(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	remaining := int64(3)
	ks := withBan(keyState{Remaining: &remaining}, ratelimit.KeyState{BannedFor: 90 * time.Minute}, now)
	if ks.BannedUntil != "2026-11-28T10:30:00Z" || *ks.Remaining != 0 {
		t.Fatalf("got banned_until %q, remaining %d; want 2026-11-28T10:30:00Z and 0", ks.BannedUntil, *ks.Remaining)
	}
	if ks := withBan(keyState{}, ratelimit.KeyState{}, now); ks.BannedUntil != "" {
		t.Fatalf("a key without a ban shows banned_until %q", ks.BannedUntil)
	}
	z := &Zone{Window: caddy.Duration(time.Minute), Limit: 1, Ban: caddy.Duration(time.Hour)}
	if err := z.checkBan(); err != nil {
		t.Fatal(err)
	}
}

// banCount returns caddy_http_rate_limit_bans_total{zone}.
func banCount(t *testing.T, reg *prometheus.Registry, zone string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != "caddy_http_rate_limit_bans_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m.GetLabel(), "zone") == zone {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
