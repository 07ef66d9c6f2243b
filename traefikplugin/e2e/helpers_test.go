//go:build !race

package e2e

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// positive matches a whole number above 0, as Retry-After and
// X-RateLimit-Reset are when a count is kept.
var positive = regexp.MustCompile(`^[1-9][0-9]*$`)

// alternate returns a for odd n and b for even n: requests alternate
// between two instances (give one twice for one instance).
func alternate(n int, a, b *traefiktest.Traefik) *traefiktest.Traefik {
	if n%2 == 1 {
		return a
	}
	return b
}

// name returns "a" for odd n and "b" for even n, as alternate picks.
func name(n int) string {
	if n%2 == 1 {
		return "a"
	}
	return "b"
}

// start renders fixture over data into a new instance and starts it,
// ready once /plain answers.
func start(t *testing.T, opts traefiktest.Options, fixture string, data map[string]any) *traefiktest.Traefik {
	t.Helper()
	tr := traefiktest.New(t, opts)
	tr.Render(fixture, data)
	tr.Start("/plain")
	return tr
}

// checkCountStatus: path is a middleware with limit 5 and countStatus
// ["401"] in front of the backend. Requests alternate between a and b: 6
// x 200 count nothing, then 5 x 401 count one each (X-RateLimit-Remaining
// 4..0: the budget the check saw, shared), then a request the backend
// would answer 200 gets 429 with Retry-After, without reaching it, as
// does the next one (our 429s count nothing).
func checkCountStatus(t *testing.T, a, b *traefiktest.Traefik, path string) {
	t.Helper()
	for n := 1; n <= 13; n++ {
		c := alternate(n, a, b)
		switch {
		case n <= 6:
			if req, resp := e2etest.Get(t, c.URL(path), "X-Status", "200"); resp.Status != 200 {
				t.Fatalf("request %d (a 200, instance %s): %v: %v, want 200", n, name(n), req, resp)
			}
		case n <= 11:
			if req, resp := e2etest.Get(t, c.URL(path), "X-Status", "401"); resp.Status != 401 || resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(11-n) {
				t.Fatalf("failed login %d (instance %s): %v: %v, want 401 with X-RateLimit-Remaining %d", n-6, name(n), req, resp, 11-n)
			}
		default:
			if req, resp := e2etest.Get(t, c.URL(path), "X-Status", "200"); resp.Status != 429 || !positive.MatchString(resp.Header.Get("Retry-After")) {
				t.Fatalf("request %d after 5 failures (instance %s): %v: %v, want 429 with Retry-After", n, name(n), req, resp)
			}
		}
	}
}

// checkOverrides: tiers is a middleware keyed by X-API-Key, limit 2,
// with the overrides gold-key 600 and 10.0.0.0/8 unlimited; internal one
// keyed by X-API-Key, limit 2, with 127.0.0.0/8 unlimited. A CIDR
// override matches the client's own address, never the key. Requests
// come from 127.0.0.1 and alternate between a and b: gold-key gets 6 x
// 200 with X-RateLimit-Limit 600 and Remaining 599..594 (one count);
// on internal, which holds the client's address, plain-key gets 6 x 200
// without a rate-limit header; the key 10.1.2.3 (an address inside the
// exempt CIDR, sent by a client outside it) and plain-key on tiers each
// get 2 x 200 with X-RateLimit-Limit 2, then 429 with Retry-After.
func checkOverrides(t *testing.T, a, b *traefiktest.Traefik, tiers, internal string) {
	t.Helper()
	for n := 1; n <= 6; n++ {
		c := alternate(n, a, b)
		req, resp := e2etest.Get(t, c.URL(tiers), "X-API-Key", "gold-key")
		if resp.Status != 200 || resp.Header.Get("X-RateLimit-Limit") != "600" || resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(600-n) {
			t.Fatalf("gold-key request %d (instance %s): %v: %v, want 200, X-RateLimit-Limit 600, X-RateLimit-Remaining %d", n, name(n), req, resp, 600-n)
		}
		req, resp = e2etest.Get(t, c.URL(internal), "X-API-Key", "plain-key")
		if resp.Status != 200 || resp.Header.Get("X-RateLimit-Limit") != "" || resp.Header.Get("RateLimit-Policy") != "" {
			t.Fatalf("client 127.0.0.1 in the exempt 127.0.0.0/8, request %d (instance %s): %v: %v, want 200 without rate-limit headers", n, name(n), req, resp)
		}
	}
	for _, key := range []string{"10.1.2.3", "plain-key"} {
		for n := 1; n <= 3; n++ {
			req, resp := e2etest.Get(t, alternate(n, a, b).URL(tiers), "X-API-Key", key)
			if resp.Header.Get("X-RateLimit-Limit") != "2" {
				t.Fatalf("%s request %d (instance %s): %v: %v, want X-RateLimit-Limit 2", key, n, name(n), req, resp)
			}
			if n <= 2 && resp.Status != 200 {
				t.Fatalf("%s request %d (instance %s): %v: %v, want 200", key, n, name(n), req, resp)
			}
			if n == 3 && (resp.Status != 429 || !positive.MatchString(resp.Header.Get("Retry-After"))) {
				t.Fatalf("%s request %d (instance %s): %v: %v, want 429 with Retry-After", key, n, name(n), req, resp)
			}
		}
	}
}
