package traefikplugin

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// TestServeRedisMatchesServeHTTP: serveRedis answers a sequence of
// requests, admitted and denied, IPv4 and IPv6, as ServeHTTP does through
// serveOther, each middleware on its own keys of one Redis.
func TestServeRedisMatchesServeHTTP(t *testing.T) {
	srv := redistest.Start(t)
	fast := redisMiddleware(t, redisConfig(srv.Addr(), 3), "fast@file").(*Middleware)
	c := redisConfig(srv.Addr(), 3)
	c.Redis.KeyPrefix = "other-" + c.Redis.KeyPrefix
	general := redisMiddleware(t, c, "fast@file-general").(*Middleware)
	if !fast.redisInline || !general.redisInline {
		t.Fatal("ServeHTTP does not send a Redis middleware with the inline path's settings to serveRedis")
	}
	general.redisInline = false // through serveOther
	// The middleware serveRedis is for: the inline path's but for its store.
	if fast.guard == nil || fast.source != nil || fast.decimals == nil || fast.dryRun || fast.countStatus != nil || fast.overrides != nil {
		t.Fatal("the fast middleware is not one serveRedis serves")
	}
	for i, remote := range []string{"203.0.113.7:1", "[2001:db8::1]:443", "203.0.113.7:2", "[2001:db8::2]:443", "203.0.113.7:3", "[2001:db8::1]:443", "203.0.113.7:4", "[2001:db8::1]:443", "203.0.113.9"} {
		got := httptest.NewRecorder()
		serveRedis(fast, got, request(remote))
		want := httptest.NewRecorder()
		general.ServeHTTP(want, request(remote))
		if got.Code != want.Code {
			t.Fatalf("request %d from %s: %d, ServeHTTP %d", i, remote, got.Code, want.Code)
		}
		for _, name := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "Content-Type", "Content-Length"} {
			if g, w := got.Header().Values(name), want.Header().Values(name); len(g) != len(w) || len(g) == 1 && g[0] != w[0] {
				t.Errorf("request %d from %s: %s %q, ServeHTTP %q", i, remote, name, g, w)
			}
		}
		// Timed from each key's own first request: within a second.
		for _, name := range []string{"X-Ratelimit-Reset", "Retry-After"} {
			g, gerr := strconv.Atoi(got.Header().Get(name))
			w, werr := strconv.Atoi(want.Header().Get(name))
			if (gerr == nil) != (werr == nil) || g-w > 1 || w-g > 1 {
				t.Errorf("request %d from %s: %s %q, ServeHTTP %q", i, remote, name, got.Header().Get(name), want.Header().Get(name))
			}
		}
	}
}

func request(remote string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/api", nil)
	r.RemoteAddr = remote
	return r
}
