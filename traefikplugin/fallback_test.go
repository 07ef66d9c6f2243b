package traefikplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/httplimit"
)

// serveHost is serve with the request's host set to host ("" for none).
func serveHost(h http.Handler, remote, host string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/api", nil)
	r.RemoteAddr, r.Host = remote, host
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// codesOf sends n requests from remote with host and header and returns
// their statuses.
func codesOf(h http.Handler, n int, remote, host string, header http.Header) []int {
	var codes []int
	for i := 0; i < n; i++ {
		codes = append(codes, serveHost(h, remote, host, header).Code)
	}
	return codes
}

func xffHeader(v ...string) http.Header { return http.Header{"X-Forwarded-For": v} }

// fallbackCases are the ways a source finds nothing in a request, each
// with a source, the request's headers and host, and the reason the log
// line gives.
var fallbackCases = []struct {
	name   string
	sc     SourceCriterion
	header http.Header
	host   string
	why    string
}{
	{"depth 1, no X-Forwarded-For", SourceCriterion{IPStrategy: &IPStrategy{Depth: 1}}, nil, "example.com",
		"sourceCriterion.ipStrategy.depth 1 found no client address: the request has no X-Forwarded-For (Traefik drops it from peers outside the entry point's forwardedHeaders.trustedIPs)"},
	{"depth 2, no X-Forwarded-For", SourceCriterion{IPStrategy: &IPStrategy{Depth: 2}}, nil, "example.com",
		"sourceCriterion.ipStrategy.depth 2 found no client address: the request has no X-Forwarded-For (Traefik drops it from peers outside the entry point's forwardedHeaders.trustedIPs)"},
	{"depth 2, one entry", SourceCriterion{IPStrategy: &IPStrategy{Depth: 2}}, xffHeader("198.51.100.1"), "example.com",
		"sourceCriterion.ipStrategy.depth 2 found no client address: X-Forwarded-For has fewer entries than the depth"},
	{"depth 2, the entry at depth 2 empty", SourceCriterion{IPStrategy: &IPStrategy{Depth: 2}}, xffHeader(", 198.51.100.1"), "example.com",
		"sourceCriterion.ipStrategy.depth 2 found no client address: the X-Forwarded-For entry at that depth is empty"},
	{"excludedIPs, every entry excluded", SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}}, xffHeader("10.0.0.1, 10.0.0.2"), "example.com",
		"sourceCriterion.ipStrategy.excludedIPs found no client address: every X-Forwarded-For entry is excluded or empty"},
	{"excludedIPs, no X-Forwarded-For", SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}}, nil, "example.com",
		"sourceCriterion.ipStrategy.excludedIPs found no client address: the request has no X-Forwarded-For (Traefik drops it from peers outside the entry point's forwardedHeaders.trustedIPs)"},
	{"excludedIPs, the 64 rightmost entries excluded", SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}}, xffHeader("198.51.100.1" + strings.Repeat(", 10.0.0.1", maxForwardedHops)), "example.com",
		"sourceCriterion.ipStrategy.excludedIPs found no client address: each of the 64 rightmost X-Forwarded-For entries is excluded or empty"},
	{"requestHeaderName missing", SourceCriterion{RequestHeaderName: "X-Key"}, nil, "example.com",
		"sourceCriterion.requestHeaderName found nothing: the request has no X-Key header, or an empty one"},
	{"requestHeaderName empty", SourceCriterion{RequestHeaderName: "X-Key"}, http.Header{"X-Key": {""}}, "example.com",
		"sourceCriterion.requestHeaderName found nothing: the request has no X-Key header, or an empty one"},
	{"requestHost empty", SourceCriterion{RequestHost: true}, nil, "",
		"sourceCriterion.requestHost found nothing: the request has no host"},
}

// TestFallbackByRemoteAddr: a request whose source finds nothing is
// counted by its remote address, not in one count shared by every such
// request: with limit 3, client A gets 200 200 200 429, then client B
// gets 200, and A from another port is still limited. In memory and in
// Redis (the key holds a NUL).
func TestFallbackByRemoteAddr(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testFallbackByRemoteAddr(t, validConfig, "") })
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		testFallbackByRemoteAddr(t, func() *Config { return redisConfig(srv.Addr(), 3) }, "-redis")
	})
}

func testFallbackByRemoteAddr(t *testing.T, config func() *Config, suffix string) {
	for i, c := range fallbackCases {
		cfg := config()
		cfg.Limit = 3
		sc := c.sc
		cfg.SourceCriterion = &sc
		name := "fallback-" + strconv.Itoa(i) + suffix + "@file"
		h := newMiddleware(t, cfg, name)
		t.Cleanup(func() { forgetRedis(name) })
		if got := codesOf(h, 4, "127.0.0.1:40001", c.host, c.header); !slices.Equal(got, []int{200, 200, 200, 429}) {
			t.Errorf("%s: client A (127.0.0.1): %v, want [200 200 200 429]", c.name, got)
		}
		if got := codesOf(h, 1, "127.0.0.2:40002", c.host, c.header); !slices.Equal(got, []int{200}) {
			t.Errorf("%s: client B (127.0.0.2) after A: %v, want [200]: a count of its own", c.name, got)
		}
		if got := codesOf(h, 1, "127.0.0.1:40003", c.host, c.header); !slices.Equal(got, []int{429}) {
			t.Errorf("%s: client A from another port: %v, want [429]: counted by address", c.name, got)
		}
	}
}

// TestFallbackApartFromRealKeys: the remote address a request without a
// source is counted by does not share the count of the real key that
// spells the same address (a client picked from X-Forwarded-For, a
// header value, a host).
func TestFallbackApartFromRealKeys(t *testing.T) {
	for i, c := range []struct {
		sc   SourceCriterion
		real func(addr string) (http.Header, string)
	}{
		{SourceCriterion{IPStrategy: &IPStrategy{Depth: 1}}, func(a string) (http.Header, string) { return xffHeader(a), "example.com" }},
		{SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}}, func(a string) (http.Header, string) { return xffHeader(a), "example.com" }},
		{SourceCriterion{RequestHeaderName: "X-Key"}, func(a string) (http.Header, string) { return http.Header{"X-Key": {a}}, "example.com" }},
		{SourceCriterion{RequestHost: true}, func(a string) (http.Header, string) { return nil, a }},
	} {
		cfg := validConfig()
		cfg.Limit = 1
		sc := c.sc
		cfg.SourceCriterion = &sc
		h := newMiddleware(t, cfg, "fallback-apart-"+strconv.Itoa(i)+"@file")
		host := "example.com"
		if sc.RequestHost {
			host = ""
		}
		if got := codesOf(h, 2, "203.0.113.7:1", host, nil); !slices.Equal(got, []int{200, 429}) {
			t.Fatalf("source %d: no source from 203.0.113.7: %v, want [200 429]", i, got)
		}
		hdr, host := c.real("203.0.113.7")
		if got := codesOf(h, 1, "198.51.100.9:1", host, hdr); !slices.Equal(got, []int{200}) {
			t.Errorf("source %d: the real key 203.0.113.7: %v, want [200]: not the fallback's count", i, got)
		}
	}
}

// TestFallbackIPv6Grouped: the remote address is grouped as the
// remote-address source groups it: by ipv6Subnet (/64 unless told
// otherwise), and by /64 for a header or the host.
func TestFallbackIPv6Grouped(t *testing.T) {
	for i, c := range []struct {
		sc     SourceCriterion
		shared bool
	}{
		{SourceCriterion{IPStrategy: &IPStrategy{Depth: 1}}, true},
		{SourceCriterion{IPStrategy: &IPStrategy{Depth: 1, IPv6Subnet: 128}}, false},
		{SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}, IPv6Subnet: 48}}, true},
		{SourceCriterion{RequestHeaderName: "X-Key"}, true},
	} {
		cfg := validConfig()
		cfg.Limit = 1
		sc := c.sc
		cfg.SourceCriterion = &sc
		h := newMiddleware(t, cfg, "fallback-v6-"+strconv.Itoa(i)+"@file")
		if got := codesOf(h, 2, "[2001:db8:1:2::1]:443", "example.com", nil); !slices.Equal(got, []int{200, 429}) {
			t.Fatalf("source %d: 2001:db8:1:2::1: %v, want [200 429]", i, got)
		}
		want := []int{200}
		if c.shared {
			want = []int{429}
		}
		if got := codesOf(h, 1, "[2001:db8:1:2::2]:443", "example.com", nil); !slices.Equal(got, want) {
			t.Errorf("source %d: 2001:db8:1:2::2, same /64: %v, want %v", i, got, want)
		}
		if got := codesOf(h, 1, "[2001:db8:9::1]:443", "example.com", nil); !slices.Equal(got, []int{200}) {
			t.Errorf("source %d: 2001:db8:9::1, another /48: %v, want [200]", i, got)
		}
	}
}

// digest is the bounded form that k would have if it were hashed.
func digest(k string) string {
	sum := sha256.Sum256([]byte(k))
	return httplimit.BoundPrefix + hex.EncodeToString(sum[:])
}

// TestFallbackCannotBeForged: a header value, an X-Forwarded-For entry or
// a host that spells the fallback key of the clients at 198.51.100.7 (in
// any spelling: its text, with more NULs, a digest) has a count
// of its own; it cannot use up theirs, and they cannot use up its.
func TestFallbackCannotBeForged(t *testing.T) {
	victim := "198.51.100.7"
	forged := []string{
		fallbackPrefix + victim,
		"\x00" + fallbackPrefix + victim,
		fallbackPrefix + victim + ":1",
		fallbackPrefix + "198.51.100.0/24",
		digest(fallbackPrefix + victim),
		httplimit.BoundKey(fallbackPrefix + strings.Repeat("9", httplimit.MaxKeyLength)),
	}
	for i, c := range []struct {
		sc    SourceCriterion
		spell func(v string) (http.Header, string)
	}{
		{SourceCriterion{RequestHeaderName: "X-Key"}, func(v string) (http.Header, string) { return http.Header{"X-Key": {v}}, "example.com" }},
		{SourceCriterion{IPStrategy: &IPStrategy{Depth: 1}}, func(v string) (http.Header, string) { return xffHeader(v), "example.com" }},
		{SourceCriterion{IPStrategy: &IPStrategy{Depth: 2}}, func(v string) (http.Header, string) { return xffHeader(v + ", 10.0.0.1"), "example.com" }},
		{SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}}, func(v string) (http.Header, string) { return xffHeader(v + ", 10.0.0.1"), "example.com" }},
		{SourceCriterion{RequestHost: true}, func(v string) (http.Header, string) { return nil, v }},
	} {
		cfg := validConfig()
		cfg.Limit = 1
		sc := c.sc
		cfg.SourceCriterion = &sc
		h := newMiddleware(t, cfg, "fallback-forged-"+strconv.Itoa(i)+"@file")
		for j, v := range forged {
			hdr, host := c.spell(v)
			if got := codesOf(h, 1, "203.0.113.9:1", host, hdr); !slices.Equal(got, []int{200}) {
				t.Errorf("source %d: forged key %d (%q): %v, want [200]", i, j, v, got)
			}
		}
		// The victim, without a source, is counted apart from all of them.
		noHost := "example.com"
		if sc.RequestHost {
			noHost = ""
		}
		if got := codesOf(h, 2, victim+":1", noHost, nil); !slices.Equal(got, []int{200, 429}) {
			t.Errorf("source %d: the client at %s without a source, after the forged keys: %v, want [200 429]", i, victim, got)
		}
		// And another such client has its own count too.
		if got := codesOf(h, 1, "198.51.100.8:1", noHost, nil); !slices.Equal(got, []int{200}) {
			t.Errorf("source %d: the client at 198.51.100.8 without a source: %v, want [200]", i, got)
		}
		// The forged keys are keys like any other: limited.
		for j, v := range forged[:1] {
			hdr, host := c.spell(v)
			if got := codesOf(h, 1, "203.0.113.9:1", host, hdr); !slices.Equal(got, []int{429}) {
				t.Errorf("source %d: forged key %d again: %v, want [429]", i, j, got)
			}
		}
	}
}

// TestFallbackOverrides: when the ipStrategy finds no address, a CIDR
// override is matched against the remote address the request is counted
// by, but only to lower its limit: behind a proxy the remote address is
// the proxy's, and an exemption or a higher limit for its range must not
// reach a request that arrived through fewer proxies than configured.
func TestFallbackOverrides(t *testing.T) {
	for i, sc := range []SourceCriterion{
		{IPStrategy: &IPStrategy{Depth: 1}},
		{IPStrategy: &IPStrategy{Depth: 2}},
		{IPStrategy: &IPStrategy{ExcludedIPs: []string{"172.16.0.0/12"}}},
	} {
		cfg := validConfig()
		cfg.Limit = 3
		sc := sc
		cfg.SourceCriterion = &sc
		cfg.Overrides = []string{"192.0.2.0/24=unlimited", "10.0.0.0/8=100", "198.51.100.0/24=1", "203.0.113.7=2"}
		h := newMiddleware(t, cfg, "fallback-overrides-"+strconv.Itoa(i)+"@file")
		for _, e := range []struct {
			remote string
			want   []int
			limit  string
		}{
			{"192.0.2.1:1", []int{200, 200, 200, 429}, "3"}, // an exempt range: not exempt
			{"10.0.0.5:1", []int{200, 200, 200, 429}, "3"},  // a higher limit: not raised
			{"198.51.100.7:1", []int{200, 429}, "1"},        // a lower limit: applies
			{"203.0.113.7:1", []int{200, 200, 429}, "2"},    // a lower limit, one address
		} {
			if got := statusesOf(t, h, len(e.want), e.remote, nil, e.limit); !slices.Equal(got, e.want) {
				t.Errorf("%+v, no source from %s: %v, want %v", sc.IPStrategy, e.remote, got, e.want)
			}
		}
		// A client the strategy finds is matched by its own address.
		hdr := xffHeader("192.0.2.9, 172.16.0.1")
		if sc.IPStrategy.Depth == 1 {
			hdr = xffHeader("192.0.2.9")
		}
		if got := statusesOf(t, h, 4, "172.16.0.1:1", hdr, ""); !slices.Equal(got, []int{200, 200, 200, 200}) {
			t.Errorf("%+v, the client 192.0.2.9: %v, want exempt", sc.IPStrategy, got)
		}
	}

	// With a header or the host, a CIDR matches the remote address
	// whether or not the source finds something, as before.
	cfg := validConfig()
	cfg.Limit = 1
	cfg.SourceCriterion = &SourceCriterion{RequestHeaderName: "X-Key"}
	cfg.Overrides = []string{"192.0.2.0/24=unlimited"}
	h := newMiddleware(t, cfg, "fallback-overrides-header@file")
	if got := statusesOf(t, h, 3, "192.0.2.1:1", nil, ""); !slices.Equal(got, []int{200, 200, 200}) {
		t.Errorf("header missing, from the exempt 192.0.2.1: %v, want exempt", got)
	}
	if got := statusesOf(t, h, 2, "198.51.100.1:1", nil, "1"); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("header missing, from 198.51.100.1: %v, want [200 429]", got)
	}
}

// TestFallbackLoggedOnce: the first request whose source finds nothing
// makes the middleware say so in Traefik's log (standard error): its
// name, the setting, why, and that such requests are counted by their
// remote address. Later ones, from any address and at once, add nothing;
// a request whose source finds something says nothing; a new instance
// of the middleware (another router, a reload) says it once again.
func TestFallbackLoggedOnce(t *testing.T) {
	var log lockedBuffer
	fallbackLog = &log
	t.Cleanup(func() { fallbackLog = errorLog })
	found := http.Header{"X-Forwarded-For": {"198.51.100.1, 198.51.100.2"}, "X-Key": {"k"}}
	for i, c := range fallbackCases {
		name := "fallback-log-" + strconv.Itoa(i) + "@file"
		line := "windowlimit: warning: middleware " + strconv.Quote(name) + ": " + c.why +
			"; such requests are counted by their remote address instead, apart from every other key (logged once per middleware instance)\n"
		cfg := validConfig()
		sc := c.sc
		cfg.SourceCriterion = &sc
		h := newMiddleware(t, cfg, name)
		before := log.String()
		serveHost(h, "203.0.113.1:1", "example.com", found)
		if got := log.String(); got != before {
			t.Errorf("%s: a request whose source found something logged %q", c.name, strings.TrimPrefix(got, before))
		}
		var wg sync.WaitGroup
		for j := 0; j < 20; j++ {
			wg.Add(1)
			go func(j int) {
				defer wg.Done()
				serveHost(h, "127.0.0."+strconv.Itoa(j+1)+":1", c.host, c.header)
			}(j)
		}
		wg.Wait()
		// Another reason, on the same instance: nothing more.
		serveHost(h, "127.0.1.1:1", "", nil)
		if got := strings.TrimPrefix(log.String(), before); got != line {
			t.Errorf("%s: log %q, want once %q", c.name, got, line)
		}
		// A new instance under the same name, as a reload makes.
		before = log.String()
		h2, err := newChecked(context.Background(), okHandler, cfg, name)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3; j++ {
			serveHost(h2, "127.0.0.1:1", c.host, c.header)
		}
		if got := strings.TrimPrefix(log.String(), before); got != line {
			t.Errorf("%s: after a reload, log %q, want once %q", c.name, got, line)
		}
	}
}

// TestFallbackLogLineDocumented: docs/traefik.md shows the line a
// middleware logs, as it logs it.
func TestFallbackLogLineDocumented(t *testing.T) {
	var log lockedBuffer
	fallbackLog = &log
	t.Cleanup(func() { fallbackLog = errorLog })
	cfg := validConfig()
	cfg.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{Depth: 1}}
	serve(newMiddleware(t, cfg, "api-limit@file"), "203.0.113.7:1", nil)
	doc, err := os.ReadFile("../docs/traefik.md")
	if err != nil {
		t.Fatal(err)
	}
	if line := log.String(); line == "" || !strings.Contains(string(doc), "\n"+line) {
		t.Errorf("docs/traefik.md does not show the line %q", line)
	}
}
