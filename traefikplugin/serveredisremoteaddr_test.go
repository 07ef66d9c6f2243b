package traefikplugin

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// TestServeRedisRemoteAddrMatchesServeAny: serveRedis answers a
// sequence of
// requests, admitted and denied, IPv4 and IPv6, as ServeHTTP does through
// serveAny, each middleware on its own keys of one Redis.
func TestServeRedisRemoteAddrMatchesServeAny(t *testing.T) {
	srv := redistest.Start(t)
	direct := middlewareOf(redisMiddleware(t, redisConfig(srv.Addr(), 3), "direct@file"))
	c := redisConfig(srv.Addr(), 3)
	c.Redis.KeyPrefix = "other-" + c.Redis.KeyPrefix
	viaAny := middlewareOf(redisMiddleware(t, c, "direct@file-any"))
	if direct.path != pathRedis || viaAny.path != pathRedis {
		t.Fatal("ServeHTTP does not send a Redis middleware with the memory path's settings to serveRedis")
	}
	setPath(viaAny, pathAny)
	// The middleware serveRedis is for: the memory path's but for
	// its store.
	if direct.guard == nil || direct.source != nil || direct.decimals == nil || direct.dryRun || direct.countStatus != nil || direct.overrides != nil {
		t.Fatal("the middleware is not one serveRedis serves")
	}
	for i, remote := range []string{"203.0.113.7:1", "[2001:db8::1]:443", "203.0.113.7:2", "[2001:db8::2]:443", "203.0.113.7:3", "[2001:db8::1]:443", "203.0.113.7:4", "[2001:db8::1]:443", "203.0.113.9"} {
		got := httptest.NewRecorder()
		serveRedis(direct, got, request(remote))
		want := httptest.NewRecorder()
		handlerOf(viaAny).ServeHTTP(want, request(remote))
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

// TestServeRedisSourceMatchesServeAny: with a sourceCriterion, serveRedis
// keys a request as serveAny does (sourceKey against keyOf): each source's
// requests, of several keys, some of them odd (missing, empty, too long,
// NUL), are admitted and denied alike.
func TestServeRedisSourceMatchesServeAny(t *testing.T) {
	srv := redistest.Start(t)
	long := strings.Repeat("k", maxKeyLength+1)
	for _, tc := range []struct {
		name   string
		source SourceCriterion
		header string // the header whose values vary
	}{
		{"header", SourceCriterion{RequestHeaderName: "X-Key"}, "X-Key"},
		{"host", SourceCriterion{RequestHost: true}, ""},
		{"depth", SourceCriterion{IPStrategy: &IPStrategy{Depth: 1}}, "X-Forwarded-For"},
		{"excluded", SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}}, "X-Forwarded-For"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redisConfig(srv.Addr(), 2)
			c.SourceCriterion = &tc.source
			direct := middlewareOf(redisMiddleware(t, c, "source-"+tc.name+"@file"))
			c2 := redisConfig(srv.Addr(), 2)
			c2.SourceCriterion = &tc.source
			c2.Redis.KeyPrefix = "other-" + c2.Redis.KeyPrefix
			viaAny := middlewareOf(redisMiddleware(t, c2, "source-"+tc.name+"@file-any"))
			if direct.path != pathRedis || viaAny.path != pathRedis {
				t.Fatal("ServeHTTP does not send a Redis middleware with a sourceCriterion to serveRedis")
			}
			setPath(viaAny, pathAny)
			values := []string{"a", "b", "", "a", long, "\x00x", "b", long, "", "\x00x", "a", "203.0.113.9, 10.1.2.3", "203.0.113.9, 10.1.2.3", "203.0.113.9, 10.1.2.3"}
			for i, v := range values {
				req := func() *http.Request {
					r := request("203.0.113.7:" + strconv.Itoa(i+1))
					if tc.header != "" && v != "" {
						r.Header.Set(tc.header, v)
					}
					if tc.header == "" {
						r.Host = "h" + v
					}
					return r
				}
				got := httptest.NewRecorder()
				serveRedis(direct, got, req())
				want := httptest.NewRecorder()
				handlerOf(viaAny).ServeHTTP(want, req())
				if got.Code != want.Code {
					t.Fatalf("request %d (%q): %d, serveAny %d", i, v, got.Code, want.Code)
				}
				if g, w := got.Header().Get("X-Ratelimit-Remaining"), want.Header().Get("X-Ratelimit-Remaining"); g != w {
					t.Errorf("request %d (%q): remaining %q, serveAny %q", i, v, g, w)
				}
			}
		})
	}
}
