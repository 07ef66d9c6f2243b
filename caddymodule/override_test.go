package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

const overridesZone = `"api":{"key":"{http.request.header.X-API-Key}","window":"1m","limit":2,
	"overrides":[{"key":"gold-key","limit":600},{"cidr":"10.0.0.0/8","unlimited":true},{"cidr":"192.0.2.0/24","limit":3}]}`

// testOverrides: the gold key gets 600 while others get 2, a client inside
// an exempt CIDR is neither counted nor limited whatever its key, a key
// that spells an address inside it is counted as any other, and CIDRs
// match the client IP of a keyless request too.
func testOverrides(t *testing.T, config string) {
	h, _ := newHandler(t, config)
	res := serve(t, h, "203.0.113.7", "/", "X-API-Key", "gold-key")
	if res.status != 200 || res.header.Get("X-RateLimit-Limit") != "600" || res.header.Get("X-RateLimit-Remaining") != "599" {
		t.Fatalf("gold key: %d %v", res.status, res.header)
	}
	if got := statuses(t, h, 20, "203.0.113.7", "/", "X-API-Key", "gold-key"); slices.Contains(got, 429) {
		t.Fatalf("gold key under 600: %v", got)
	}
	if got := statuses(t, h, 3, "203.0.113.7", "/", "X-API-Key", "silver-key"); !slices.Equal(got, []int{200, 200, 429}) {
		t.Fatalf("another key: %v, want [200 200 429]", got)
	}
	if res := serve(t, h, "203.0.113.7", "/", "X-API-Key", "silver-key"); res.header.Get("X-RateLimit-Limit") != "2" {
		t.Fatalf("another key's limit header %q, want 2", res.header.Get("X-RateLimit-Limit"))
	}
	// A client inside the exempt CIDR: no limit, no header, whatever its key.
	for i := 0; i < 10; i++ {
		res := serve(t, h, "10.1.2.3", "/", "X-API-Key", "silver-key")
		if res.status != 200 || res.header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("exempt client, request %d: %d %v", i+1, res.status, res.header)
		}
	}
	// A key that spells an address inside it, from outside: limited.
	if got := statuses(t, h, 3, "203.0.113.7", "/", "X-API-Key", "10.1.2.3"); !slices.Equal(got, []int{200, 200, 429}) {
		t.Fatalf("key 10.1.2.3 from 203.0.113.7: %v, want [200 200 429]", got)
	}
	// No key: the fallback counts the client IP, which CIDRs match.
	for i := 0; i < 10; i++ {
		if res := serve(t, h, "10.9.9.9", "/"); res.status != 200 || res.header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("keyless client in the exempt CIDR, request %d: %d %v", i+1, res.status, res.header)
		}
	}
	if got := statuses(t, h, 4, "192.0.2.9", "/"); !slices.Equal(got, []int{200, 200, 200, 429}) {
		t.Fatalf("keyless client in 192.0.2.0/24 (limit 3): %v", got)
	}
	if got := statuses(t, h, 3, "198.51.100.1", "/"); !slices.Equal(got, []int{200, 200, 429}) {
		t.Fatalf("keyless client outside the CIDRs: %v", got)
	}
}

func TestOverridesMemory(t *testing.T) {
	testOverrides(t, `{"rate_limits":{`+overridesZone+`}}`)
}

func TestOverridesRedis(t *testing.T) {
	srv := redistest.Start(t)
	testOverrides(t, `{"redis":{"address":"`+srv.Addr()+`","key_prefix":"ov:"},"rate_limits":{`+overridesZone+`}}`)
}

// TestOverridesIETF: RateLimit-Policy shows the override's q.
func TestOverridesIETF(t *testing.T) {
	h, _ := newHandler(t, `{"headers":"ietf","rate_limits":{`+overridesZone+`}}`)
	res := serve(t, h, "203.0.113.7", "/", "X-API-Key", "gold-key")
	if got := res.header.Get("RateLimit-Policy"); got != `"api";q=600;w=60` {
		t.Fatalf("RateLimit-Policy %q", got)
	}
}

// headerKeyedZone is keyed by X-API-Key, limit 2, and exempts the clients
// of 10.0.0.0/8.
const headerKeyedZone = `{"rate_limits":{"api":{"key":"{http.request.header.X-API-Key}","window":"1m","limit":2,
	"overrides":[{"cidr":"10.0.0.0/8","unlimited":true}]}}}`

// TestOverrideCIDRMatchesClientNotKey: a CIDR override matches the
// client's address, never the key a client sends: keys that spell an
// address, a mapped address or the CIDR itself are counted as any other,
// and a client inside the CIDR is exempt whatever its key, an address
// outside the CIDR or none.
func TestOverrideCIDRMatchesClientNotKey(t *testing.T) {
	h, _ := newHandler(t, headerKeyedZone)
	for _, key := range []string{"10.0.0.1", "::ffff:10.9.9.9", "10.0.0.0/8", "10.0.0.0"} {
		got := statuses(t, h, 3, "127.0.0.1", "/", "X-API-Key", key)
		if !slices.Equal(got, []int{200, 200, 429}) {
			t.Errorf("client 127.0.0.1 with the key %q: %v, want [200 200 429]", key, got)
		}
	}
	for _, client := range []string{"10.1.2.3", "::ffff:10.9.9.9"} {
		for _, key := range []string{"any-key", "127.0.0.1", ""} {
			for i := range 4 {
				res := serve(t, h, client, "/", "X-API-Key", key)
				if res.status != 200 || res.header.Get("X-RateLimit-Limit") != "" {
					t.Fatalf("client %s with the key %q, request %d: %d %v, want 200 without headers", client, key, i+1, res.status, res.header)
				}
			}
		}
	}
}

// TestOverrideIPv6Client: a CIDR override matches an IPv6 client by its
// own address, not by the /64 that groups its key: ::1 exempts the
// client ::1 and ::/128 does not, with the default key and with a header
// key; a CIDR holding the whole /64 exempts it too.
func TestOverrideIPv6Client(t *testing.T) {
	for i, c := range []struct {
		cidr, key string
		exempt    bool
	}{
		{"::1", "", true},
		{"::1/128", "", true},
		{"::/128", "", false},
		{"::/64", "", true},
		{"::1", "{http.request.header.X-API-Key}", true},
		{"::/128", "{http.request.header.X-API-Key}", false},
	} {
		zone := "v6-" + strconv.Itoa(i) // handlers of one zone share its counts
		h, _ := newHandler(t, `{"rate_limits":{"`+zone+`":{"key":"`+c.key+`","window":"1m","limit":1,
			"overrides":[{"cidr":"`+c.cidr+`","unlimited":true}]}}}`)
		got := statuses(t, h, 3, "::1", "/", "X-API-Key", "k")
		want := []int{200, 429, 429}
		if c.exempt {
			want = []int{200, 200, 200}
		}
		if !slices.Equal(got, want) {
			t.Errorf("override %s, key %q, client ::1: %v, want %v", c.cidr, c.key, got, want)
		}
	}
	// A header key that spells the exempt address, from another /64.
	h, _ := newHandler(t, `{"rate_limits":{"v6-key":{"key":"{http.request.header.X-API-Key}","window":"1m","limit":1,
		"overrides":[{"cidr":"::1","unlimited":true}]}}}`)
	if got := statuses(t, h, 2, "2001:db8::5", "/", "X-API-Key", "::1"); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("client 2001:db8::5 with the key ::1: %v, want [200 429]", got)
	}
}

// serveWith sends one request with the replacer values vals set, as the
// map directive or vars would, and returns its status and headers.
func serveWith(t *testing.T, h *Handler, clientIP string, vals map[string]any) (int, http.Header) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	vars := map[string]any{caddyhttp.ClientIPVarKey: clientIP}
	ctx := context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars)
	repl := caddy.NewReplacer()
	for k, v := range vals {
		repl.Set(k, v)
	}
	r = r.WithContext(context.WithValue(ctx, caddy.ReplacerCtxKey, repl))
	w := httptest.NewRecorder()
	passed := false
	err := h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		passed = true
		return nil
	}))
	if !passed {
		if err == nil {
			return w.Code, w.Header()
		}
		return http.StatusTooManyRequests, w.Header()
	}
	return http.StatusOK, w.Header()
}

// TestLimitPlaceholder: the limit comes from a replacer value per
// request; a key keeps its count when its tier changes.
func TestLimitPlaceholder(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"window":"1m","limit_placeholder":"{plan_limit}"}}}`)
	for i := 0; i < 4; i++ {
		code, hdr := serveWith(t, h, "203.0.113.7", map[string]any{"plan_limit": "4"})
		if code != 200 || hdr.Get("X-RateLimit-Limit") != "4" {
			t.Fatalf("silver request %d: %d %v", i+1, code, hdr)
		}
	}
	if code, _ := serveWith(t, h, "203.0.113.7", map[string]any{"plan_limit": "4"}); code != 429 {
		t.Fatalf("fifth silver request: %d", code)
	}
	// Upgraded to 6: the 4 already counted stay.
	if code, hdr := serveWith(t, h, "203.0.113.7", map[string]any{"plan_limit": 6}); code != 200 || hdr.Get("X-RateLimit-Remaining") != "1" {
		t.Fatalf("upgraded: %d %v, want 1 remaining", code, hdr)
	}
}

// TestLimitPlaceholderBadValue: a value that is not a valid limit falls
// back to the zone's limit (1 by default), never to no limit, and is
// logged at most once a minute.
func TestLimitPlaceholderBadValue(t *testing.T) {
	for _, c := range []struct {
		config string
		want   int // requests admitted
	}{
		{`{"rate_limits":{"api":{"window":"1m","limit_placeholder":"{plan_limit}"}}}`, 1},
		{`{"rate_limits":{"api":{"window":"1m","limit_placeholder":"{plan_limit}","limit":2}}}`, 2},
	} {
		for j, v := range []any{"", "abc", "0", "-5", "1.5", "99999999999999999999", "unlimited", " 4", 0, -1, "1073741825"} {
			h, _ := newHandler(t, c.config)
			core, logs := observer.New(zap.WarnLevel)
			h.logger = zap.New(core)
			admitted := 0
			for i := 0; i < 5; i++ {
				// Handlers with the same zone share its counts: one client each.
				ip := "198.51.100." + strconv.Itoa(j+1)
				if code, _ := serveWith(t, h, ip, map[string]any{"plan_limit": v}); code == 200 {
					admitted++
				}
			}
			if admitted != c.want {
				t.Errorf("%s, plan_limit %#v: %d admitted, want %d", c.config, v, admitted, c.want)
			}
			if logs.Len() != 1 || !strings.Contains(logs.All()[0].Message, "no valid limit") {
				t.Errorf("plan_limit %#v: %d warnings, want 1", v, logs.Len())
			}
		}
	}
	// Without the placeholder in the request at all: the fallback too.
	h, _ := newHandler(t, `{"rate_limits":{"api":{"window":"1m","limit_placeholder":"{plan_limit}"}}}`)
	if a, b := serve(t, h, "203.0.113.99", "/").status, serve(t, h, "203.0.113.99", "/").status; a != 200 || b != 429 {
		t.Errorf("placeholder unset: %d %d, want 200 429", a, b)
	}
	// Log zones refuse a value above MaxLogLimit.
	h, _ = newHandler(t, `{"rate_limits":{"api":{"window":"1m","algorithm":"log","limit_placeholder":"{plan_limit}"}}}`)
	if a, _ := serveWith(t, h, "203.0.113.7", map[string]any{"plan_limit": "2000"}); a != 200 {
		t.Fatal(a)
	}
	if a, _ := serveWith(t, h, "203.0.113.7", map[string]any{"plan_limit": "2000"}); a != 429 {
		t.Errorf("log zone with plan_limit 2000: %d, want the fallback 1", a)
	}
}

// TestOverrideBeatsPlaceholder: a key's override applies before its tier.
func TestOverrideBeatsPlaceholder(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"window":"1m","limit_placeholder":"{plan_limit}","overrides":[{"cidr":"10.0.0.0/8","unlimited":true}]}}}`)
	for i := 0; i < 5; i++ {
		if code, _ := serveWith(t, h, "10.0.0.1", map[string]any{"plan_limit": "1"}); code != 200 {
			t.Fatalf("exempt client, request %d: %d", i+1, code)
		}
	}
}

func TestOverrideErrors(t *testing.T) {
	zone := func(extra string) string {
		return `{"rate_limits":{"api":{"window":"1m","limit":10` + extra + `}}}`
	}
	for _, c := range []struct{ extra, want string }{
		{`,"overrides":[{"cidr":"10.0.0.0/33","limit":5}]`, "bad CIDR"},
		{`,"overrides":[{"cidr":"not-an-ip","limit":5}]`, "bad CIDR"},
		{`,"overrides":[{"key":"10.0.0.0/8","limit":5}]`, "goes in cidr"},
		{`,"overrides":[{"key":"10.0.0.1","limit":5}]`, "goes in cidr"},
		{`,"overrides":[{"key":"::1","limit":5}]`, "goes in cidr"},
		{`,"overrides":[{"key":"a","limit":-1}]`, "positive integer"},
		{`,"overrides":[{"key":"a"}]`, "positive integer"},
		{`,"overrides":[{"key":"a","limit":5,"unlimited":true}]`, "not both"},
		{`,"overrides":[{"key":"a","cidr":"10.0.0.0/8","limit":5}]`, "not both"},
		{`,"overrides":[{"limit":5}]`, "key or cidr is required"},
		{`,"overrides":[{"key":"a","limit":5},{"key":"a","limit":6}]`, "given twice"},
		{`,"algorithm":"log","overrides":[{"key":"a","limit":2000}]`, "too large for the log algorithm"},
		{`,"limit_placeholder":"{a}{b}"`, "one placeholder"},
	} {
		expectProvisionError(t, zone(c.extra), c.want)
	}
}

func TestOverrideCaddyfile(t *testing.T) {
	h := new(Handler)
	in := `rate_limit {
		zone api {
			key {header.X-API-Key}
			window 1m
			limit {plan_limit} 2
			override gold-key 600
			override 10.0.0.0/8 unlimited
			override 192.0.2.1 5
		}
	}`
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
		t.Fatal(err)
	}
	z := h.RateLimits["api"]
	want := []Override{{Key: "gold-key", Limit: 600}, {CIDR: "10.0.0.0/8", Unlimited: true}, {CIDR: "192.0.2.1", Limit: 5}}
	if z.LimitPlaceholder != "{plan_limit}" || z.Limit != 2 || !slices.Equal(z.Overrides, want) {
		t.Fatalf("zone %+v", z)
	}
	for _, c := range []struct{ line, want string }{
		{"override gold-key unlimted", "positive integer or unlimited"},
		{"override gold-key 0", "positive integer or unlimited"},
		{"override gold-key", "want <key or CIDR>"},
		{"override 10.0.0.0/33 5", "bad CIDR"},
		{"override a 5\n override a 6", "given twice"},
		{"limit {a} {b}", "fallback limit must be a positive integer"},
		{"limit 5 6", "wrong argument count"},
		{"limit x", "positive integer or a placeholder"},
	} {
		in := "rate_limit {\n zone api {\n window 1m\n limit 10\n " + c.line + "\n }\n}"
		if strings.HasPrefix(c.line, "limit") {
			in = "rate_limit {\n zone api {\n window 1m\n " + c.line + "\n }\n}"
		}
		err := new(Handler).UnmarshalCaddyfile(caddyfile.NewTestDispenser(in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.line, err, c.want)
		}
	}
}
