package traefikplugin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// These tests build the middleware with New, as Traefik does, against a
// real redis-server that listens with TLS only: a request is admitted
// through Redis only if redis.tls works. onStoreError is deny, so any
// store failure shows as a 429 with Retry-After 1 from the first request.

// tlsConfig is redisConfig for the TLS server srv with tls set.
func tlsConfig(srv *redistest.Server, tls *RedisTLS) *Config {
	c := redisConfig(srv.Addr(), 5)
	c.Redis.TLS = tls
	c.OnStoreError = "deny"
	return c
}

// expectLimitedThroughRedis checks that the middleware of c limits a
// client to 5 per minute through srv (see redistest.ExpectLimited).
func expectLimitedThroughRedis(t *testing.T, srv *redistest.Server, c *Config, name string) {
	t.Helper()
	h := redisMiddleware(t, c, name)
	redistest.ExpectLimited(t, srv, c.Redis.KeyPrefix+name+":{203.0.113.7}", func() (int, http.Header) {
		w := serve(h, "203.0.113.7:1", nil)
		return w.Code, w.Header()
	})
}

// expectDenied checks that onStoreError deny decided every request, that
// the store log has a line (containing reason unless it is empty), and
// that Redis has no key.
func expectDenied(t *testing.T, srv *redistest.Server, c *Config, name, reason string) {
	t.Helper()
	var log strings.Builder
	storeLog = &log
	defer func() { storeLog = errorLog }()
	h := redisMiddleware(t, c, name)
	for i := 1; i <= 3; i++ {
		if w := serve(h, "203.0.113.7:1", nil); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
			t.Fatalf("request %d: %d Retry-After %q, want onStoreError deny's 429 with Retry-After 1",
				i, w.Code, w.Header().Get("Retry-After"))
		}
	}
	if !strings.Contains(log.String(), "; requests decided by onStoreError deny") || !strings.Contains(log.String(), reason) {
		t.Errorf("store log does not say %q:\n%s", reason, log.String())
	}
	if n := srv.Do(t, "EXISTS", c.Redis.KeyPrefix+name+":{203.0.113.7}")[0]; n != "0" {
		t.Errorf("the key is in Redis (EXISTS %s): the connection was accepted", n)
	}
}

func TestRedisTLS(t *testing.T) {
	srv, certs := redistest.StartTLS(t)
	other := redistest.WriteCerts(t)
	t.Run("ca", func(t *testing.T) {
		expectLimitedThroughRedis(t, srv, tlsConfig(srv, &RedisTLS{CA: certs.CA}), "tls-ca@file")
	})
	t.Run("insecureSkipVerify", func(t *testing.T) {
		expectLimitedThroughRedis(t, srv, tlsConfig(srv, &RedisTLS{InsecureSkipVerify: true}), "tls-insecure@file")
	})
	t.Run("other ca", func(t *testing.T) {
		expectDenied(t, srv, tlsConfig(srv, &RedisTLS{CA: other.CA}), "tls-other@file", "certificate signed by unknown authority")
	})
	t.Run("system roots", func(t *testing.T) {
		expectDenied(t, srv, tlsConfig(srv, &RedisTLS{}), "tls-system@file", "certificate signed by unknown authority")
	})
	t.Run("no tls", func(t *testing.T) {
		expectDenied(t, srv, tlsConfig(srv, nil), "tls-none@file", "")
	})
}

// With --tls-auth-clients yes the server wants a client certificate.
func TestRedisTLSClientCert(t *testing.T) {
	srv, certs := redistest.StartTLS(t, "--tls-auth-clients", "yes")
	// With TLS 1.3 the client learns of the refusal after its handshake:
	// the error is "certificate required" or, when the server's reset
	// beats the alert, "connection reset by peer". Either way: denied.
	expectDenied(t, srv, tlsConfig(srv, &RedisTLS{CA: certs.CA}), "tls-nocert@file", "")
	expectLimitedThroughRedis(t, srv, tlsConfig(srv, &RedisTLS{CA: certs.CA, Cert: certs.Cert, Key: certs.Key}), "tls-cert@file")
}
