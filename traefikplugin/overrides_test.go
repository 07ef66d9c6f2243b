package traefikplugin

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// testOverrides: with limit 2 on X-API-Key, the gold key gets 600 while
// others get 2, and a key inside an exempt CIDR is neither counted nor
// limited and gets no headers.
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
		w := serve(h, "203.0.113.7:1234", key("10.1.2.3"))
		if w.Code != 200 || w.Header().Get("X-RateLimit-Limit") != "" {
			t.Fatalf("exempt key, request %d: %d %v", i+1, w.Code, w.Header())
		}
	}
}

func TestOverridesMemory(t *testing.T) {
	testOverrides(t, validConfig(), "overrides@file")
}

func TestOverridesRedis(t *testing.T) {
	srv := redistest.Start(t)
	testOverrides(t, redisConfig(srv.Addr(), 2), "overrides-redis@file")
}

// TestOverridesRemoteAddr: the default key, the remote address, matched
// by a CIDR; the IETF policy shows the override's q; the middleware
// without overrides keeps the inline path.
func TestOverridesRemoteAddr(t *testing.T) {
	c := validConfig()
	c.Limit = 1
	c.Headers = "both"
	c.Overrides = []string{"192.0.2.0/24=3", "10.0.0.0/8=unlimited"}
	h := newMiddleware(t, c, "overrides-remote@file")
	if !h.(*Middleware).slow {
		t.Fatal("a middleware with overrides is not slow")
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
	if plain.(*Middleware).slow {
		t.Fatal("a middleware without overrides left the inline path")
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
		_, err := New(context.Background(), okHandler, cfg, "bad")
		if err == nil || !strings.Contains(err.Error(), "overrides: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want overrides: ...%s", c.list, err, c.want)
		}
	}
	cfg := validConfig()
	cfg.Algorithm = "log"
	cfg.Overrides = []string{"a=2000"}
	if _, err := New(context.Background(), okHandler, cfg, "bad"); err == nil || !strings.Contains(err.Error(), "log algorithm") {
		t.Errorf("log override above 1024: %v", err)
	}
	// A label's comma-separated string, and a key holding '='.
	cfg = validConfig()
	cfg.Overrides = []string{"gold-key=600,10.0.0.0/8=unlimited", "YWJj==5"}
	s, err := cfg.validate()
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := s.overrides.Match("YWJj="); !ok || n != 5 {
		t.Errorf("key with '=': %d %v", n, ok)
	}
	if n, ok := s.overrides.Match("10.2.3.4"); !ok || n != -1 {
		t.Errorf("label CIDR: %d %v", n, ok)
	}
}
