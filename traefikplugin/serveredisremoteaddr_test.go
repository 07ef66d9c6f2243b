package traefikplugin

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// TestServeRedisRemoteAddrMatchesServeAny: serveRedisRemoteAddr answers a
// sequence of
// requests, admitted and denied, IPv4 and IPv6, as ServeHTTP does through
// serveAny, each middleware on its own keys of one Redis.
func TestServeRedisRemoteAddrMatchesServeAny(t *testing.T) {
	srv := redistest.Start(t)
	direct := redisMiddleware(t, redisConfig(srv.Addr(), 3), "direct@file").(*Middleware)
	c := redisConfig(srv.Addr(), 3)
	c.Redis.KeyPrefix = "other-" + c.Redis.KeyPrefix
	viaAny := redisMiddleware(t, c, "direct@file-any").(*Middleware)
	if !direct.redisRemoteAddr || !viaAny.redisRemoteAddr {
		t.Fatal("ServeHTTP does not send a Redis middleware with the memory path's settings to serveRedisRemoteAddr")
	}
	viaAny.redisRemoteAddr = false // through serveAny
	// The middleware serveRedisRemoteAddr is for: the memory path's but for
	// its store.
	if direct.guard == nil || direct.source != nil || direct.decimals == nil || direct.dryRun || direct.countStatus != nil || direct.overrides != nil {
		t.Fatal("the middleware is not one serveRedisRemoteAddr serves")
	}
	for i, remote := range []string{"203.0.113.7:1", "[2001:db8::1]:443", "203.0.113.7:2", "[2001:db8::2]:443", "203.0.113.7:3", "[2001:db8::1]:443", "203.0.113.7:4", "[2001:db8::1]:443", "203.0.113.9"} {
		got := httptest.NewRecorder()
		serveRedisRemoteAddr(direct, got, request(remote))
		want := httptest.NewRecorder()
		viaAny.ServeHTTP(want, request(remote))
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
