package traefikplugin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// testOverrides: with limit 2 on X-API-Key, the gold key gets 600 while
// others get 2, a client inside the exempt CIDR is neither counted nor
// limited and gets no headers whatever its key, and a key that spells an
// address inside the CIDR is counted as any other.
func testOverrides(t *testing.T, c *Config, name string) {
	c.Limit = 2
	c.SourceCriterion = &SourceCriterion{RequestHeaderName: "X-API-Key"}
	c.Overrides = []string{"gold-key=600", "10.0.0.0/8=unlimited"}
	h := newMiddleware(t, c, name)
	t.Cleanup(func() { forgetRedis(name) })
	key := func(k string) http.Header { return http.Header{"X-Api-Key": {k}} }
	for i := 0; i < 20; i++ {
		w := serve(h, "203.0.113.7:1234", key("gold-key"))
		if w.Code != 200 || w.Header().Get("X-RateLimit-Limit") != "600" || w.Header().Get("X-RateLimit-Remaining") != strconv.Itoa(599-i) {
			t.Fatalf("gold key, request %d: %d %v", i+1, w.Code, w.Header())
		}
	}
	var codes []int
	for i := 0; i < 3; i++ {
		codes = append(codes, serve(h, "203.0.113.7:1234", key("silver-key")).Code)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Fatalf("another key: %v, want [200 200 429]", codes)
	}
	for i := 0; i < 10; i++ {
		w := serve(h, "10.1.2.3:1234", key("silver-key"))
		if w.Code != 200 || w.Header().Get("X-RateLimit-Limit") != "" {
			t.Fatalf("exempt client, request %d: %d %v", i+1, w.Code, w.Header())
		}
	}
	codes = nil
	for i := 0; i < 3; i++ {
		w := serve(h, "203.0.113.7:1234", key("10.1.2.3"))
		if w.Header().Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("key 10.1.2.3 from 203.0.113.7, request %d: %d %v, want the limit 2", i+1, w.Code, w.Header())
		}
		codes = append(codes, w.Code)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Fatalf("key 10.1.2.3 from 203.0.113.7: %v, want [200 200 429]", codes)
	}
}

func TestOverridesMemory(t *testing.T) {
	testOverrides(t, validConfig(), "overrides@file")
}

func TestOverridesRedis(t *testing.T) {
	srv := redistest.Start(t)
	testOverrides(t, redisConfig(srv.Addr(), 2), "overrides-redis@file")
}

// statusesOf sends n requests from remote with the headers h and returns
// their statuses; it fails the test if an allowed request's
// X-RateLimit-Limit is not limit ("" for an exempt request).
func statusesOf(t *testing.T, h http.Handler, n int, remote string, hdr http.Header, limit string) []int {
	t.Helper()
	var codes []int
	for i := 0; i < n; i++ {
		w := serve(h, remote, hdr)
		if got := w.Header().Get("X-RateLimit-Limit"); got != limit {
			t.Fatalf("%s %v, request %d: %d, X-RateLimit-Limit %q, want %q", remote, hdr, i+1, w.Code, got, limit)
		}
		codes = append(codes, w.Code)
	}
	return codes
}

// TestOverridesCIDRMatchesClientNotKey: a CIDR override matches the
// client's address, never the key a client sends: keys that spell an
// address, a mapped address or the CIDR itself are counted as any other,
// and a client inside the CIDR is exempt whatever its key, for a header
// key and for the request's host.
func TestOverridesCIDRMatchesClientNotKey(t *testing.T) {
	c := validConfig()
	c.Limit = 2
	c.SourceCriterion = &SourceCriterion{RequestHeaderName: "X-API-Key"}
	c.Overrides = []string{"10.0.0.0/8=unlimited"}
	h := newMiddleware(t, c, "overrides-not-key@file")
	for _, k := range []string{"10.0.0.1", "::ffff:10.9.9.9", "10.0.0.0/8", "10.0.0.0"} {
		got := statusesOf(t, h, 3, "127.0.0.1:1234", http.Header{"X-Api-Key": {k}}, "2")
		if !slices.Equal(got, []int{200, 200, 429}) {
			t.Errorf("client 127.0.0.1 with the key %q: %v, want [200 200 429]", k, got)
		}
	}
	for _, remote := range []string{"10.1.2.3:1234", "[::ffff:10.9.9.9]:1234", "10.1.2.4"} {
		for _, k := range []string{"any-key", "127.0.0.1", ""} {
			got := statusesOf(t, h, 4, remote, http.Header{"X-Api-Key": {k}}, "")
			if !slices.Equal(got, []int{200, 200, 200, 200}) {
				t.Errorf("client %s with the key %q: %v, want 4 x 200", remote, k, got)
			}
		}
	}

	c = validConfig()
	c.Limit = 1
	c.SourceCriterion = &SourceCriterion{RequestHost: true}
	c.Overrides = []string{"10.0.0.0/8=unlimited"}
	h = newMiddleware(t, c, "overrides-host@file")
	send := func(remote, host string) int {
		r := httptest.NewRequest(http.MethodGet, "http://"+host+"/", nil)
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if a, b := send("127.0.0.1:1234", "10.0.0.1"), send("127.0.0.1:1234", "10.0.0.1"); a != 200 || b != 429 {
		t.Errorf("host 10.0.0.1 from 127.0.0.1: %d %d, want 200 429", a, b)
	}
	if a, b := send("10.0.0.1:1234", "example.com"), send("10.0.0.1:1234", "example.com"); a != 200 || b != 200 {
		t.Errorf("host example.com from 10.0.0.1: %d %d, want 200 200", a, b)
	}
}

// TestOverridesIPv6Client: a CIDR override matches an IPv6 client by its
// own address, not by the /64 that groups its key: ::1 exempts the client
// ::1 and ::/128 does not, with the remote address as the key and with a
// header key; a CIDR holding the whole /64 exempts it too.
func TestOverridesIPv6Client(t *testing.T) {
	for i, c := range []struct {
		cidr   string
		header bool
		exempt bool
	}{
		{"::1", false, true},
		{"::1/128", false, true},
		{"::/128", false, false},
		{"::/64", false, true},
		{"::1", true, true},
		{"::/128", true, false},
	} {
		cfg := validConfig()
		cfg.Limit = 1
		cfg.Overrides = []string{c.cidr + "=unlimited"}
		if c.header {
			cfg.SourceCriterion = &SourceCriterion{RequestHeaderName: "X-API-Key"}
		}
		h := newMiddleware(t, cfg, "overrides-v6-"+strconv.Itoa(i)+"@file")
		want, limit := []int{200, 429, 429}, "1"
		if c.exempt {
			want, limit = []int{200, 200, 200}, ""
		}
		if got := statusesOf(t, h, 3, "[::1]:1234", http.Header{"X-Api-Key": {"k"}}, limit); !slices.Equal(got, want) {
			t.Errorf("override %s, header key %v, client ::1: %v, want %v", c.cidr, c.header, got, want)
		}
	}
	// A header key that spells the exempt address, from another /64.
	cfg := validConfig()
	cfg.Limit = 1
	cfg.Overrides = []string{"::1=unlimited"}
	cfg.SourceCriterion = &SourceCriterion{RequestHeaderName: "X-API-Key"}
	h := newMiddleware(t, cfg, "overrides-v6-key@file")
	if got := statusesOf(t, h, 2, "[2001:db8::5]:1234", http.Header{"X-Api-Key": {"::1"}}, "1"); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("client 2001:db8::5 with the key ::1: %v, want [200 429]", got)
	}
}

// TestOverridesIPStrategy: with an ipStrategy, a CIDR override matches
// the address the strategy picks, before grouping by ipv6Subnet: not the
// proxy's remote address, not another X-Forwarded-For entry; a request
// whose X-Forwarded-For is shorter than the depth is counted by its remote
// address, and the proxy's exempt range does not exempt it (see
// TestFallbackOverrides).
func TestOverridesIPStrategy(t *testing.T) {
	xff := func(v string) http.Header { return http.Header{"X-Forwarded-For": {v}} }
	c := validConfig()
	c.Limit = 1
	c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{Depth: 1}}
	c.Overrides = []string{"10.0.0.0/8=unlimited", "2001:db8::1=unlimited", "192.0.2.0/24=unlimited"}
	h := newMiddleware(t, c, "overrides-depth@file")
	for _, e := range []struct {
		remote, xff string
		exempt      bool
	}{
		{"192.0.2.1:1234", "203.0.113.9, 10.1.2.3", true},
		{"192.0.2.1:1234", "[2001:db8::1]:443", true}, // by its address, not its /64
		{"192.0.2.1:1234", "10.1.2.3, 203.0.113.9", false},
		{"192.0.2.1:1234", "2001:db8::2", false},
		{"10.0.0.5:1234", "203.0.113.10", false},
		{"192.0.2.1:1234", "", false}, // no entry: counted by 192.0.2.1, not exempt
	} {
		want, limit := []int{200, 429}, "1"
		if e.exempt {
			want, limit = []int{200, 200}, ""
		}
		if got := statusesOf(t, h, 2, e.remote, xff(e.xff), limit); !slices.Equal(got, want) {
			t.Errorf("depth 1, %s, X-Forwarded-For %q: %v, want %v", e.remote, e.xff, got, want)
		}
	}

	c = validConfig()
	c.Limit = 1
	c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"192.0.2.0/24"}}}
	c.Overrides = []string{"10.0.0.0/8=unlimited"}
	h = newMiddleware(t, c, "overrides-excluded@file")
	if got := statusesOf(t, h, 2, "192.0.2.1:1234", xff("10.1.2.3, 192.0.2.7"), ""); !slices.Equal(got, []int{200, 200}) {
		t.Errorf("excluded IPs, the client 10.1.2.3: %v, want 2 x 200", got)
	}
	if got := statusesOf(t, h, 2, "10.0.0.5:1234", xff("203.0.113.9, 192.0.2.7"), "1"); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("excluded IPs, the client 203.0.113.9 behind 10.0.0.5: %v, want [200 429]", got)
	}
}

// TestOverridesRemoteAddr: the default key, the remote address, matched
// by a CIDR; the IETF policy shows the override's q; the middleware
// without overrides keeps the memory path.
func TestOverridesRemoteAddr(t *testing.T) {
	c := validConfig()
	c.Limit = 1
	c.Headers = "both"
	c.Overrides = []string{"192.0.2.0/24=3", "10.0.0.0/8=unlimited"}
	h := newMiddleware(t, c, "overrides-remote@file")
	if middlewareOf(h).path < pathRedis {
		t.Fatal("a middleware with overrides is on the memory path")
	}
	for i := 0; i < 3; i++ {
		w := serve(h, "192.0.2.9:1234", nil)
		if w.Code != 200 || w.Header().Get("RateLimit-Policy") != `"overrides-remote@file";q=3;w=60` {
			t.Fatalf("request %d in 192.0.2.0/24: %d %v", i+1, w.Code, w.Header())
		}
	}
	if w := serve(h, "192.0.2.9:1234", nil); w.Code != 429 || w.Header().Get("X-RateLimit-Limit") != "3" {
		t.Fatalf("fourth request in 192.0.2.0/24: %d %v", w.Code, w.Header())
	}
	for i := 0; i < 5; i++ {
		if w := serve(h, "10.0.0.1:1234", nil); w.Code != 200 {
			t.Fatalf("exempt client: %d", w.Code)
		}
	}
	if w := serve(h, "198.51.100.1:1234", nil); w.Code != 200 || serve(h, "198.51.100.1:1234", nil).Code != 429 {
		t.Fatal("a client outside the CIDRs is not limited to 1")
	}
	plain := newMiddleware(t, validConfig(), "no-overrides@file")
	if middlewareOf(plain).path >= pathRedis {
		t.Fatal("a middleware without overrides left the memory path")
	}
}

// TestOverridesCountStatus: an override applies to the check and the
// charge of countStatus.
func TestOverridesCountStatus(t *testing.T) {
	c := validConfig()
	c.Window, c.Limit, c.CountStatus = "15m", 1, []string{"401"}
	c.Overrides = []string{"203.0.113.7=3"}
	b := new(statusBackend)
	h := countStatusMiddleware(t, c, "overrides-login@file", b)
	for i := 0; i < 3; i++ {
		if w := loginAs(h, 401); w.Code != 401 || w.Header().Get("X-RateLimit-Limit") != "3" {
			t.Fatalf("failed login %d: %d %v", i+1, w.Code, w.Header())
		}
	}
	if w := loginAs(h, 401); w.Code != 429 {
		t.Fatalf("fourth failed login: %d", w.Code)
	}
}

func TestOverridesBadValues(t *testing.T) {
	for _, c := range []struct {
		list []string
		want string
	}{
		{[]string{"gold-key"}, "must be <key or CIDR>=<limit>"},
		{[]string{"=5"}, "must be <key or CIDR>=<limit>"},
		{[]string{"gold-key=unlimted"}, "positive integer or unlimited"},
		{[]string{"gold-key=0"}, "positive integer or unlimited"},
		{[]string{"gold-key=-3"}, "positive integer or unlimited"},
		{[]string{"10.0.0.0/33=5"}, "bad CIDR"},
		{[]string{"gold-key=5", "gold-key=6"}, "given twice"},
		{[]string{"gold-key=5,gold-key=6"}, "given twice"},
	} {
		cfg := validConfig()
		cfg.Overrides = c.list
		_, err := newChecked(context.Background(), okHandler, cfg, "bad")
		if err == nil || !strings.Contains(err.Error(), "overrides: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want overrides: ...%s", c.list, err, c.want)
		}
	}
	cfg := validConfig()
	cfg.Algorithm = "log"
	cfg.Overrides = []string{"a=2000"}
	if _, err := newChecked(context.Background(), okHandler, cfg, "bad"); err == nil || !strings.Contains(err.Error(), "log algorithm") {
		t.Errorf("log override above 1024: %v", err)
	}
	// A label's comma-separated string, and a key holding '='.
	cfg = validConfig()
	cfg.Overrides = []string{"gold-key=600,10.0.0.0/8=unlimited", "YWJj==5"}
	s, err := cfg.validate()
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := s.overrides.Match("YWJj=", netip.Addr{}); !ok || n != 5 {
		t.Errorf("key with '=': %d %v", n, ok)
	}
	if n, ok := s.overrides.Match("k", netip.MustParseAddr("10.2.3.4")); !ok || n != -1 {
		t.Errorf("label CIDR: %d %v", n, ok)
	}
}

// FuzzOverriddenKey: with CIDR overrides, a request's key is the one the
// middleware computes without them, whatever the source and the input,
// and the address the CIDRs match is the one the ipStrategy picks, or
// else the remote address, never the key. When the ipStrategy picks
// nothing, the remote address is matched only by a CIDR that lowers the
// limit (192.0.2.0/24=5 under a limit of 20).
func FuzzOverriddenKey(f *testing.F) {
	f.Add("192.0.2.9:1", "")
	f.Add("[::ffff:192.0.2.9]:1", "")
	f.Add("192.0.2.9:1", "10.0.0.1")
	for _, s := range []string{"", "203.0.113.7:4711", "[2001:db8::1]:443", "[::ffff:10.0.0.1]:1", "10.0.0.1",
		"1.1.1.1, 2.2.2.2", "[2001:db8::9]:443", "fe80::1%eth0", "fe80::1%" + strings.Repeat("z", 300),
		strings.Repeat("a", 300) + ":80", "sha256:x", "1.2.3.4:80:90", "\xff"} {
		f.Add(s, s)
		f.Add("203.0.113.7:4711", s)
	}
	var sources []*SourceCriterion
	for _, ip := range []*IPStrategy{nil, {IPv6Subnet: 128}, {Depth: 1}, {Depth: 2, IPv6Subnet: 128}, {ExcludedIPs: []string{"10.0.0.0/8", "::1"}}} {
		sources = append(sources, &SourceCriterion{IPStrategy: ip})
	}
	sources = append(sources, &SourceCriterion{RequestHeaderName: "X-K"}, &SourceCriterion{RequestHost: true})
	var ms []*Middleware
	for i, sc := range sources {
		c := validConfig()
		c.SourceCriterion = sc
		c.Overrides = []string{"192.0.2.0/24=5"}
		name := "fuzz-overridden-" + strconv.Itoa(i)
		forget(name)
		f.Cleanup(func() { forget(name) })
		h, err := newChecked(context.Background(), okHandler, c, name)
		if err != nil {
			f.Fatal(err)
		}
		ms = append(ms, middlewareOf(h))
	}
	lower := netip.MustParsePrefix("192.0.2.0/24")
	f.Fuzz(func(t *testing.T, remote, v string) {
		r := requestFrom(remote, v)
		r.Header["X-K"] = []string{v}
		r.Host = v
		for i, m := range ms {
			key, client := overriddenKey(m, r)
			var want string
			addr := remoteHost(remote)
			if m.source == nil {
				want = addrKey(remote, m.v6Bits)
			} else {
				want = keyOf(m.source, r)
				if m.source.kind == sourceIP {
					addr = pickIP(m.source.ip, r)
					if a, err := netip.ParseAddr(remoteHost(remote)); addr == "" && err == nil && lower.Contains(a.Unmap().WithZone("")) {
						addr = remoteHost(remote)
					}
				}
			}
			if key != want {
				t.Errorf("source %d, remote %q, value %q: key %q, want %q", i, remote, v, key, want)
			}
			if a, _ := netip.ParseAddr(addr); client != a {
				t.Errorf("source %d, remote %q, value %q: client %v, want %v", i, remote, v, client, a)
			}
		}
	})
}
