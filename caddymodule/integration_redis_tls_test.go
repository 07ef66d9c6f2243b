package caddymodule

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// These tests run Caddy from a Caddyfile against a real redis-server that
// listens with TLS only, so a request can be admitted through Redis only
// if the TLS settings of `store redis` work.

// redisBlockSite is a site whose zone "ired" (5 per minute per ?who=)
// keeps its counts in Redis, reached with the lines of store (inside
// `store redis { }`), under a fresh key prefix that it returns.
func redisBlockSite(port int, store, policy string) (config, prefix string) {
	prefix = "tls" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	return siteConfig(port, `rate_limit {
		zone ired {
			key {query.who}
			window 1m
			limit 5
		}
		store redis {
			`+store+`
			key_prefix `+prefix+`
			timeout 500ms
		}
		on_store_error `+policy+`
	}`), prefix
}

// expectLimitedThroughRedis checks that zone "ired" limits who to 5 per
// minute through srv (see redistest.ExpectLimited).
func expectLimitedThroughRedis(t *testing.T, tc *caddytest.Tester, srv *redistest.Server, port int, prefix, who string) {
	t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/?who=" + who
	redistest.ExpectLimited(t, srv, prefix+"ired:{"+who+"}", func() (int, http.Header) {
		resp, _ := get(t, tc, url)
		return resp.StatusCode, resp.Header
	})
}

// expectPolicy sends requests for who and checks that on_store_error
// decided them all: deny answers 429 with Retry-After 1, allow lets 7
// requests through a limit of 5. Redis must not have the zone's key.
func expectPolicy(t *testing.T, tc *caddytest.Tester, srv *redistest.Server, port int, prefix, who, policy string) {
	t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/?who=" + who
	for i := 1; i <= 7; i++ {
		resp, _ := get(t, tc, url)
		switch policy {
		case "deny":
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
				t.Fatalf("request %d: %d Retry-After %q, want on_store_error deny's 429 with Retry-After 1",
					i, resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		case "allow":
			if resp.StatusCode != 200 {
				t.Fatalf("request %d: %d, want on_store_error allow's 200", i, resp.StatusCode)
			}
		default:
			t.Fatalf("policy %q", policy)
		}
	}
	if n := srv.Do(t, "EXISTS", prefix+"ired:{"+who+"}")[0]; n != "0" {
		t.Errorf("the zone's key is in Redis (EXISTS %s): the connection was accepted", n)
	}
}

// The limit is kept in Redis over TLS, configured by address with a tls
// block, by a rediss:// URL with a tls block, and with
// insecure_skip_verify; on_store_error deny makes any failure visible.
func TestIntegrationRedisTLS(t *testing.T) {
	srv, certs := redistest.StartTLS(t)
	tc := newTester(t)
	port := freePort(t)
	for _, tt := range []struct{ name, store string }{
		{"address", "address " + srv.Addr() + "\n\t\t\ttls {\n\t\t\t\tca " + certs.CA + "\n\t\t\t}"},
		{"url", "url rediss://" + srv.Addr() + "/0\n\t\t\ttls {\n\t\t\t\tca " + certs.CA + "\n\t\t\t}"},
		{"server_name", "address " + srv.Addr() + "\n\t\t\ttls {\n\t\t\t\tca " + certs.CA + "\n\t\t\t\tserver_name 127.0.0.1\n\t\t\t}"},
		{"insecure", "address " + srv.Addr() + "\n\t\t\ttls {\n\t\t\t\tinsecure_skip_verify\n\t\t\t}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			config, prefix := redisBlockSite(port, tt.store, "deny")
			tc.InitServer(config, "caddyfile")
			expectLimitedThroughRedis(t, tc, srv, port, prefix, "alice")
		})
	}
}

// A server whose certificate the config does not trust is refused, and
// on_store_error decides: no request is admitted through it nor fails
// with a 5xx. Plain TCP to the TLS port fails the same way.
func TestIntegrationRedisTLSUntrusted(t *testing.T) {
	srv, certs := redistest.StartTLS(t)
	other := redistest.WriteCerts(t)
	tc := newTester(t)
	port := freePort(t)
	for _, tt := range []struct{ name, store, policy string }{
		{"other ca", "address " + srv.Addr() + "\n\t\t\ttls {\n\t\t\t\tca " + other.CA + "\n\t\t\t}", "deny"},
		{"system roots", "url rediss://" + srv.Addr(), "allow"},
		{"bare tls", "address " + srv.Addr() + "\n\t\t\ttls", "deny"},
		{"wrong server_name", "address " + srv.Addr() + "\n\t\t\ttls {\n\t\t\t\tca " + certs.CA + "\n\t\t\t\tserver_name redis.example\n\t\t\t}", "deny"},
		{"no tls", "address " + srv.Addr(), "allow"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			config, prefix := redisBlockSite(port, tt.store, tt.policy)
			tc.InitServer(config, "caddyfile")
			expectPolicy(t, tc, srv, port, prefix, "mallory", tt.policy)
		})
	}
}

// With --tls-auth-clients yes, a config without a client certificate is
// refused (on_store_error decides) and one with cert and key is limited
// through Redis.
func TestIntegrationRedisTLSClientCert(t *testing.T) {
	srv, certs := redistest.StartTLS(t, "--tls-auth-clients", "yes")
	tc := newTester(t)
	port := freePort(t)
	ca := "address " + srv.Addr() + "\n\t\t\ttls {\n\t\t\t\tca " + certs.CA

	config, prefix := redisBlockSite(port, ca+"\n\t\t\t}", "deny")
	tc.InitServer(config, "caddyfile")
	expectPolicy(t, tc, srv, port, prefix, "bob", "deny")

	config, prefix = redisBlockSite(port, ca+"\n\t\t\t\tcert "+certs.Cert+"\n\t\t\t\tkey "+certs.Key+"\n\t\t\t}", "deny")
	tc.InitServer(config, "caddyfile")
	expectLimitedThroughRedis(t, tc, srv, port, prefix, "bob")
}
