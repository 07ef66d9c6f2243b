package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func prefixes(t testing.TB, list ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, s := range list {
		p, err := caddyhttp.CIDRExpressionToPrefix(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// privateRanges are Caddy's private_ranges, as trusted_proxies writes them.
var privateRanges = []string{"192.168.0.0/16", "172.16.0.0/12", "10.0.0.0/8", "127.0.0.1/8", "fd00::/8", "::1"}

// TestProxyHop: a client IP inside the trusted ranges, in either form, is
// a proxy hop when it is not the connection's own address; a client that
// connects from a trusted range itself is not.
func TestProxyHop(t *testing.T) {
	for _, c := range []struct {
		ranges         []string
		remote, client string
		want           bool
	}{
		{privateRanges, "127.0.0.1:5000", "::ffff:10.0.0.3", true}, // the mapped hop strict mode did not skip
		{privateRanges, "127.0.0.1:5000", "10.0.0.3", true},        // a trusted address taken from the header (not strict)
		{privateRanges, "127.0.0.1:5000", "fd00::5", true},
		{privateRanges, "@", "::ffff:10.0.0.3", true}, // through trusted_proxies_unix
		{privateRanges, "10.0.0.3:5000", "10.0.0.3", false},
		{privateRanges, "[::ffff:10.0.0.3]:5000", "10.0.0.3", false},
		{privateRanges, "10.0.0.3:5000", "::ffff:10.0.0.3", false},
		{privateRanges, "[fd00::5%eth0]:5000", "fd00::5", false},
		{privateRanges, "127.0.0.1:5000", "127.0.0.1", false},
		{privateRanges, "127.0.0.1:5000", "203.0.113.7", false},            // a client behind the proxies
		{privateRanges, "127.0.0.1:5000", "::ffff:203.0.113.7", false},     // written mapped
		{privateRanges, "127.0.0.1:5000", "2001:db8::7", false},            // an IPv6 client
		{[]string{"::ffff:10.0.0.0/104"}, "[::1]:5000", "10.0.0.3", true},  // ranges written mapped
		{[]string{"::ffff:10.0.0.0/104"}, "[::1]:5000", "11.0.0.3", false}, // outside them
		{[]string{"::/0"}, "[::1]:5000", "10.0.0.3", true},                 // every IPv6 address holds the mapped ones
		{[]string{"2001:db8::/32"}, "[::1]:5000", "10.0.0.3", false},
	} {
		tp := &trustedProxies{ranges: prefixes(t, c.ranges...)}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = c.remote
		if got := tp.proxyHop(r, netip.MustParseAddr(c.client)); got != c.want {
			t.Errorf("trusted %v, connection %s, client IP %s: proxy hop %v, want %v", c.ranges, c.remote, c.client, got, c.want)
		}
	}
}

// TestPrefixesOverlap: an override overlaps the trusted ranges through
// either form of the addresses.
func TestPrefixesOverlap(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"10.0.0.0/8", "10.1.0.0/16", true},
		{"10.0.0.0/8", "127.0.0.1/8", false},
		{"10.0.0.0/8", "::ffff:10.0.0.0/104", true},
		{"10.2.3.4/32", "::ffff:10.0.0.0/104", true},
		{"::ffff:10.2.3.4/128", "10.0.0.0/8", true},
		{"11.0.0.0/8", "::ffff:10.0.0.0/104", false},
		{"10.0.0.0/8", "::/0", true},
		{"10.0.0.0/8", "fd00::/8", false},
		{"fd00:1::/32", "fd00::/8", true},
	} {
		a, b := netip.MustParsePrefix(c.a), netip.MustParsePrefix(c.b)
		if got := prefixesOverlap(a, b); got != c.want {
			t.Errorf("%s and %s: overlap %v, want %v", c.a, c.b, got, c.want)
		}
		if got := prefixesOverlap(b, a); got != c.want {
			t.Errorf("%s and %s: overlap %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

// serveFrom sends one request through h from the connection address
// remote, with clientIP as the client IP Caddy's server determined.
func serveFrom(t *testing.T, h *Handler, remote, clientIP string) (int, http.Header) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	r.RemoteAddr = remote
	vars := map[string]any{caddyhttp.ClientIPVarKey: clientIP}
	r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddyhttp.NewTestReplacer(r)))
	w := httptest.NewRecorder()
	passed := false
	h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		passed = true
		return nil
	}))
	if !passed {
		return http.StatusTooManyRequests, w.Header()
	}
	return http.StatusOK, w.Header()
}

// TestOverrideSkipsProxyHop: behind trusted proxies, an override that
// lifts the limit does not apply to a trusted proxy reported as the
// client (the rule's limit applies, logged once), but does to a client
// that connects from the same range itself and to a client behind the
// proxies; an override that lowers the limit applies to the proxy too;
// a key override applies whatever the address.
func TestOverrideSkipsProxyHop(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"hop":{"key":"{http.request.header.X-API-Key}","window":"1m","limit":2,"overrides":[
		{"cidr":"10.0.0.0/8","unlimited":true},{"cidr":"10.9.0.0/16","limit":1},{"cidr":"10.8.0.0/16","limit":3},
		{"cidr":"198.51.100.0/24","unlimited":true},{"key":"gold-key","limit":600}]}}}`)
	h.proxies = &trustedProxies{ranges: prefixes(t, privateRanges...)}
	core, logs := observer.New(zap.WarnLevel)
	h.logger = zap.New(core)
	run := func(remote, client string, n int, limit string) {
		t.Helper()
		var got []int
		for range n {
			code, hdr := serveFrom(t, h, remote, client)
			got = append(got, code)
			if l := hdr.Get("X-RateLimit-Limit"); l != limit {
				t.Fatalf("connection %s, client IP %s: X-RateLimit-Limit %q, want %q", remote, client, l, limit)
			}
		}
		want := slices.Repeat([]int{200}, n)
		if limit != "" {
			k, _ := strconv.Atoi(limit)
			want = append(slices.Repeat([]int{200}, k), slices.Repeat([]int{429}, n-k)...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("connection %s, client IP %s: %v, want %v", remote, client, got, want)
		}
	}
	run("127.0.0.1:4000", "::ffff:10.0.0.3", 4, "2")    // the mapped hop: the rule's limit
	run("127.0.0.1:4001", "10.0.0.4", 4, "2")           // a trusted address from the header
	run("127.0.0.1:4002", "::ffff:10.8.0.3", 4, "2")    // a higher limit is not applied either
	run("127.0.0.1:4003", "::ffff:10.9.0.3", 3, "1")    // a lower one is
	run("10.1.2.3:4004", "10.1.2.3", 5, "")             // a client connecting from the range: exempt
	run("[::ffff:10.1.2.4]:4005", "10.1.2.4", 5, "")    // the same, written mapped
	run("10.8.0.4:4006", "10.8.0.4", 4, "3")            // and a higher limit
	run("127.0.0.1:4007", "198.51.100.7", 5, "")        // a client behind the proxies: exempt
	run("127.0.0.1:4008", "::ffff:198.51.100.8", 5, "") // the same, written mapped
	if logs.Len() != 1 || !strings.Contains(logs.All()[0].Message, "trusted proxy") || logs.All()[0].ContextMap()["client_ip"] != "::ffff:10.0.0.3" {
		t.Errorf("%d warnings (%v), want 1 naming the client IP as Caddy wrote it, ::ffff:10.0.0.3", logs.Len(), logs.All())
	}

	// A key override is no address: it applies to the proxy's requests.
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	r.RemoteAddr = "127.0.0.1:4009"
	r.Header.Set("X-API-Key", "gold-key")
	r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{caddyhttp.ClientIPVarKey: "::ffff:10.0.0.5"}))
	repl := caddyhttp.NewTestReplacer(r)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, r, nopNext); err != nil || w.Header().Get("X-RateLimit-Limit") != "600" {
		t.Errorf("gold-key through the mapped hop: %v, X-RateLimit-Limit %q, want 600", err, w.Header().Get("X-RateLimit-Limit"))
	}
}

// dynamicRanges is a trusted_proxies source other than static, as a
// module that fetches its ranges would be: the handler asks Caddy's own
// check about it.
type dynamicRanges struct{}

func (dynamicRanges) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.ip_sources.wltest_dynamic", New: func() caddy.Module { return new(dynamicRanges) }}
}

func (dynamicRanges) GetIPRanges(*http.Request) []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}
}

func (*dynamicRanges) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	for d.Next() {
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	return nil
}

func init() { caddy.RegisterModule(dynamicRanges{}) }

// TestIntegrationProxyHop: through Caddy's server, with
// trusted_proxies_strict and this test's client (127.0.0.1) a trusted
// proxy, a chain whose X-Forwarded-For ends with a proxy hop written
// IPv4-mapped (::ffff:10.0.0.3, which Caddy does not trust) is held to
// the zone's limit, not exempted by `override 10.0.0.0/8 unlimited`;
// the client connecting directly keeps its exemption (127.0.0.0/8), and
// so does a client behind the proxies; with the mapped range trusted too,
// Caddy skips the hop and the client in front of it gets its own budget.
// For a static source and for another module.
func TestIntegrationProxyHop(t *testing.T) {
	for i, trusted := range []string{"static private_ranges", "wltest_dynamic", "static private_ranges ::ffff:10.0.0.0/104"} {
		t.Run(trusted, func(t *testing.T) {
			tc := newTester(t)
			port := freePort(t)
			tc.InitServer(fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	skip_install_trust
	servers {
		trusted_proxies %s
		trusted_proxies_strict
		client_ip_headers X-Forwarded-For
	}
}
:%d {
	rate_limit {
		zone hop%d {
			window 1m
			limit 3
			override 10.0.0.0/8 unlimited
			override 127.0.0.0/8 unlimited
			override 198.51.100.0/24 unlimited
		}
	}
	respond "ok"
}
`, adminPort, port, trusted, port, i), "caddyfile")
			url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
			send := func(xff string, n int) []int {
				t.Helper()
				var got []int
				for range n {
					r, err := http.NewRequest(http.MethodGet, url, nil)
					if err != nil {
						t.Fatal(err)
					}
					if xff != "" {
						r.Header.Set("X-Forwarded-For", xff)
					}
					resp, err := tc.Client.Do(r)
					if err != nil {
						t.Fatalf("GET %s: %v", url, err)
					}
					resp.Body.Close()
					got = append(got, resp.StatusCode)
				}
				return got
			}
			limited := []int{200, 200, 200, 429, 429}
			free := []int{200, 200, 200, 200, 200}
			denied := []int{429, 429, 429, 429, 429}
			mapped := strings.Contains(trusted, "::ffff:") // Caddy skips the mapped hop
			pick := func(unmapped, withMapped []int) []int {
				if mapped {
					return withMapped
				}
				return unmapped
			}
			for _, c := range []struct {
				xff  string
				want []int
			}{
				{"", free}, // 127.0.0.1 itself
				// The client IP is the hop (key 10.0.0.3), or the client.
				{"203.0.113.7, ::ffff:10.0.0.3", limited},
				{"203.0.113.8, ::ffff:10.0.0.3", pick(denied, limited)},
				{"198.51.100.7, 10.0.0.4", free}, // Caddy skips the hop; the client is exempt
				{"198.51.100.7, ::ffff:10.0.0.5", pick(limited, free)},
				{"10.1.2.3", free}, // trusted: the client IP is 127.0.0.1
			} {
				if got := send(c.xff, 5); !slices.Equal(got, c.want) {
					t.Errorf("X-Forwarded-For %q: %v, want %v", c.xff, got, c.want)
				}
			}
		})
	}
}

// TestOverlapWarning provisions whole configs, as caddy validate does: a
// CIDR override that lifts the limit and overlaps a static
// trusted_proxies range is named in one warning per zone; one that
// lowers the limit, or lies outside the ranges, is not.
func TestOverlapWarning(t *testing.T) {
	const strict = "trusted_proxies static private_ranges\n\t\ttrusted_proxies_strict"
	tests := []struct {
		name, servers, overrides string
		want                     []string // the overrides named; nil for no warning
	}{
		{"exempt internal range", strict, "override 10.0.0.0/8 unlimited", []string{"10.0.0.0/8"}},
		{"higher limit", strict, "override 10.1.0.0/16 50\n\t\t\toverride 203.0.113.0/24 unlimited", []string{"10.1.0.0/16"}},
		{"lower limit", strict, "override 10.0.0.0/8 2", nil},
		{"outside the ranges", strict, "override 203.0.113.0/24 unlimited", nil},
		{"mapped range trusted", "trusted_proxies static ::ffff:10.0.0.0/104\n\t\ttrusted_proxies_strict", "override 10.0.0.3 unlimited", []string{"10.0.0.3"}},
		{"no trusted proxies", "", "override 10.0.0.0/8 unlimited", nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logFile := filepath.Join(t.TempDir(), "log.json")
			global := fmt.Sprintf("\tlog warnings {\n\t\toutput file %s\n\t\tformat json\n\t\tinclude http.handlers.rate_limit\n\t}\n", logFile)
			if tt.servers != "" {
				global = "\tservers {\n\t\t" + tt.servers + "\n\t}\n" + global
			}
			zone := fmt.Sprintf("overlap%d", i)
			caddyfile := fmt.Sprintf("{\n%s}\n\n:%d {\n\trate_limit {\n\t\tzone %s {\n\t\t\twindow 1m\n\t\t\tlimit 5\n\t\t\t%s\n\t\t}\n\t}\n\trespond \"ok\"\n}\n",
				global, freePort(t), zone, tt.overrides)
			adapted, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
			if err != nil || len(warnings) > 0 {
				t.Fatalf("adapting %s: %v %v", caddyfile, err, warnings)
			}
			var cfg caddy.Config
			if err := json.Unmarshal(adapted, &cfg); err != nil {
				t.Fatal(err)
			}
			if err := caddy.Validate(&cfg); err != nil {
				t.Fatalf("validate: %v", err)
			}
			var lines []map[string]any
			if data, err := os.ReadFile(logFile); err == nil {
				for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
					var entry map[string]any
					if json.Unmarshal([]byte(l), &entry) == nil && strings.HasPrefix(fmt.Sprint(entry["msg"]), "CIDR override overlaps trusted_proxies") {
						lines = append(lines, entry)
					}
				}
			}
			if tt.want == nil {
				if len(lines) != 0 {
					t.Fatalf("warned: %v", lines)
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("%d warnings, want 1", len(lines))
			}
			var named []string
			for _, o := range lines[0]["overrides"].([]any) {
				named = append(named, o.(string))
			}
			if lines[0]["level"] != "warn" || lines[0]["zone"] != zone || !slices.Equal(named, tt.want) || !strings.Contains(fmt.Sprint(lines[0]["msg"]), "::ffff:10.0.0.0/104") {
				t.Errorf("warning %v, want one at warn for zone %s naming %v", lines[0], zone, tt.want)
			}
		})
	}
}
