package traefikplugin

import (
	"io"
	"net"
	"net/http/httptest"
	"testing"
)

// With Redis down, onStoreError allow admits with Remaining = limit - cost
// and a reset of 0, deny rejects with Retry-After 1 (docs/headers.md), and
// serveRedis answers as serveAny does, for hostile remote
// addresses too.
func TestServeRedisRemoteAddrWithRedisDown(t *testing.T) {
	// A loopback port nothing listens on: every dial is refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	defer func(w io.Writer) { storeLog = w }(storeLog)
	storeLog = io.Discard
	for _, policy := range []string{"allow", "deny"} {
		c := redisConfig(addr, 5)
		c.Cost = 2
		c.OnStoreError = policy
		direct := middlewareOf(redisMiddleware(t, c, "down-"+policy+"@file"))
		if direct.path != pathRedis {
			t.Fatal("not served by serveRedis")
		}
		for _, remote := range []string{"203.0.113.7:1", "[2001:db8::1]:443", "", "[", "[::1", ":", "[2001:db8::1]"} {
			got := httptest.NewRecorder()
			serveRedis(direct, got, request(remote))
			want := httptest.NewRecorder()
			serveAny(direct, want, request(remote))
			if got.Code != want.Code {
				t.Fatalf("%s from %q: %d, serveAny %d", policy, remote, got.Code, want.Code)
			}
			for _, name := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Retry-After"} {
				if g, w := got.Header().Get(name), want.Header().Get(name); g != w {
					t.Errorf("%s from %q: %s %q, serveAny %q", policy, remote, name, g, w)
				}
			}
			h := got.Header()
			switch policy {
			case "allow":
				if got.Code != 200 || h.Get("X-Ratelimit-Remaining") != "3" || h.Get("X-Ratelimit-Reset") != "0" {
					t.Errorf("allow from %q: %d remaining %q reset %q, want 200, 3, 0", remote, got.Code, h.Get("X-Ratelimit-Remaining"), h.Get("X-Ratelimit-Reset"))
				}
			case "deny":
				if got.Code != 429 || h.Get("Retry-After") != "1" {
					t.Errorf("deny from %q: %d Retry-After %q, want 429, 1", remote, got.Code, h.Get("Retry-After"))
				}
			}
		}
	}
}
