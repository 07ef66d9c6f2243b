//go:build !race

package e2e

import (
	"strconv"
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
)

// tiersSite is the site of TestE2EOverridesAndTiers, in memory: /tiers
// keyed by X-API-Key, its limit from the map directive, with an override
// for a key and one for an address range; /internal exempts the loopback.
const tiersSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
}
:{{.Web}} {
	bind 127.0.0.1
	handle /tiers {
		map {header.X-API-Key} {plan_limit} {
			silver-key 4
			broken-key oops
			default    2
		}
		rate_limit {
			zone tiers {
				key      {http.request.header.X-API-Key}
				window   1m
				limit    {plan_limit}
				override gold-key 600
				override 10.0.0.0/8 unlimited
			}
		}
		respond "tiers"
	}
	handle /internal {
		rate_limit {
			zone internal {
				key      {http.request.header.X-API-Key}
				window   1m
				limit    2
				override 127.0.0.0/8 unlimited
			}
		}
		respond "internal"
	}
}
`

// alternate returns a for odd n and b for even n: requests alternate
// between two instances (or go to one, given twice).
func alternate(n int, a, b *caddy) *caddy {
	if n%2 == 1 {
		return a
	}
	return b
}

// checkOverrides: /tiers is a zone keyed by X-API-Key, limit 2 for most
// keys, with the overrides gold-key 600 and 10.0.0.0/8 unlimited;
// /internal a zone keyed by X-API-Key, limit 2, with 127.0.0.0/8
// unlimited. Requests from 127.0.0.1 alternate between a and b: gold-key
// gets 6 x 200 under 600 (remaining 599..594, one count), the client is
// exempt on /internal (no headers), and the key 10.1.2.3 (an address in
// the exempt CIDR, sent by a client outside it) and plain-key get 2 x 200
// under 2, then 429 with Retry-After.
func checkOverrides(t *testing.T, a, b *caddy) {
	t.Run("gold-key gets its override and 127.0.0.0/8 is exempt", func(t *testing.T) {
		for n := 1; n <= 6; n++ {
			c := alternate(n, a, b)
			req, resp := e2etest.Get(t, c.url("/tiers"), "X-API-Key", "gold-key")
			if resp.Status != 200 || resp.Header.Get("X-RateLimit-Limit") != "600" ||
				resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(600-n) {
				t.Fatalf("request %d: %v: %v, want 200 with limit 600, remaining %d", n, req, resp, 600-n)
			}
			req, resp = e2etest.Get(t, c.url("/internal"), "X-API-Key", "plain-key")
			if resp.Status != 200 || resp.Header.Get("X-RateLimit-Limit") != "" || resp.Header.Get("RateLimit-Policy") != "" {
				t.Fatalf("client 127.0.0.1 in the exempt 127.0.0.0/8, request %d: %v: %v, want 200 without rate-limit headers", n, req, resp)
			}
		}
	})
	t.Run("a CIDR override matches the client, never the key", func(t *testing.T) {
		for _, key := range []string{"10.1.2.3", "plain-key"} {
			for n := 1; n <= 3; n++ {
				req, resp := e2etest.Get(t, alternate(n, a, b).url("/tiers"), "X-API-Key", key)
				ok := resp.Header.Get("X-RateLimit-Limit") == "2"
				if n <= 2 {
					ok = ok && resp.Status == 200
				} else {
					ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
					ok = ok && resp.Status == 429 && err == nil && ra >= 1
				}
				if !ok {
					t.Fatalf("%s request %d: %v: %v, want limit 2: 200, 200, then 429 with Retry-After", key, n, req, resp)
				}
			}
		}
	})
}

// checkTiers: /tiers takes its limit from the map directive (silver-key 4,
// broken-key "oops", default 2) through limit {plan_limit}, whose fallback
// is 1. Alternating between a and b, silver-key gets 4 x 200 under 4, then
// 429; broken-key gets the fallback, 200 then 429, never unlimited; and a
// logged that once.
func checkTiers(t *testing.T, a, b *caddy) {
	t.Run("limit from map, and a broken tier falls back to 1, logged", func(t *testing.T) {
		for n := 1; n <= 5; n++ {
			want := 200
			if n > 4 {
				want = 429
			}
			req, resp := e2etest.Get(t, alternate(n, a, b).url("/tiers"), "X-API-Key", "silver-key")
			if resp.Status != want || resp.Header.Get("X-RateLimit-Limit") != "4" {
				t.Fatalf("silver-key request %d: %v: %v, want %d with limit 4", n, req, resp, want)
			}
		}
		for n := 1; n <= 2; n++ {
			want := 200
			if n > 1 {
				want = 429
			}
			req, resp := e2etest.Get(t, alternate(n, a, b).url("/tiers"), "X-API-Key", "broken-key")
			if resp.Status != want || resp.Header.Get("X-RateLimit-Limit") != "1" {
				t.Fatalf("broken-key request %d: %v: %v, want %d with the fallback limit 1", n, req, resp, want)
			}
		}
		if !a.logged("limit placeholder holds no valid limit") {
			t.Errorf("caddy logged no warning about the tier \"oops\" (want \"limit placeholder holds no valid limit\")")
		}
	})
}

// TestE2EOverridesAndTiers checks overrides and limits from placeholders
// in memory, on one instance (TestE2ERedisShared checks the same through
// Redis on two).
func TestE2EOverridesAndTiers(t *testing.T) {
	c := newCaddy(t)
	c.render(tiersSite, nil)
	c.start()
	checkOverrides(t, c, c)
	checkTiers(t, c, c)
}
