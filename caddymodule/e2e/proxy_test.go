//go:build !race

package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
)

// proxySite is the site of TestE2ETrustedProxy: Caddy takes the client from
// X-Forwarded-For behind the trusted proxies, and the zone exempts two
// ranges, one of them holding this test's client.
const proxySite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
	servers {
		trusted_proxies static {{.Trusted}}
		trusted_proxies_strict
		client_ip_headers X-Forwarded-For
	}
}
:{{.Web}} {
	bind 127.0.0.1
	rate_limit {
		zone proxied {
			window 1m
			limit 5
			override 10.0.0.0/8 unlimited
			override 127.0.0.0/8 unlimited
		}
	}
	respond "ok"
}
`

// sendAll sends n GETs with the given headers and returns their statuses
// and X-RateLimit-Limit values ("-" for none), space-separated.
func sendAll(t *testing.T, url string, n int, header ...string) (codes, limits string) {
	t.Helper()
	var cs, ls []string
	for range n {
		_, resp := e2etest.Get(t, url, header...)
		cs = append(cs, strconv.Itoa(resp.Status))
		l := resp.Header.Get("X-RateLimit-Limit")
		if l == "" {
			l = "-"
		}
		ls = append(ls, l)
	}
	return strings.Join(cs, " "), strings.Join(ls, " ")
}

// repeat returns word n times, space-separated.
func repeat(word string, n int) string {
	return strings.TrimSpace(strings.Repeat(word+" ", n))
}

// TestE2ETrustedProxy checks that a trusted proxy Caddy reports as the
// client is never exempt by a CIDR override.
func TestE2ETrustedProxy(t *testing.T) {
	c := newCaddy(t)
	c.render(proxySite, map[string]any{"Trusted": "private_ranges"})
	c.start()
	url := c.url("/")

	if !c.logged("CIDR override overlaps trusted_proxies") {
		t.Errorf("no warning at load about 10.0.0.0/8 overlapping trusted_proxies (want \"CIDR override overlaps trusted_proxies\")")
	}
	xff := "203.0.113.7, ::ffff:10.0.0.3"
	if codes, limits := sendAll(t, url, 6, "X-Forwarded-For", xff); codes != "200 200 200 200 200 429" || limits != repeat("5", 6) {
		t.Fatalf("6 x GET %s [X-Forwarded-For: %s]: %s (limits %s), want 200 200 200 200 200 429 under limit 5: the IPv4-mapped hop got the exemption",
			url, xff, codes, limits)
	}
	xff = "203.0.113.8, ::ffff:10.0.0.3"
	if codes, _ := sendAll(t, url, 1, "X-Forwarded-For", xff); codes != "429" {
		t.Fatalf("another client behind the same hop, GET %s [X-Forwarded-For: %s]: %s, want 429 (the hop's budget)", url, xff, codes)
	}
	if !c.logged(`"msg":"client IP is a trusted proxy that Caddy did not recognise`) {
		t.Errorf("no warning about the hop at request time (want \"client IP is a trusted proxy that Caddy did not recognise\")")
	}
	if codes, limits := sendAll(t, url, 20); codes != repeat("200", 20) || limits != repeat("-", 20) {
		t.Fatalf("20 x GET %s from 127.0.0.1 directly: %s (limits %s), want 20 x 200 without rate-limit headers (override 127.0.0.0/8 unlimited)",
			url, codes, limits)
	}

	c.render(proxySite, map[string]any{"Trusted": "private_ranges ::ffff:10.0.0.0/104"})
	c.load()
	xff = "203.0.113.9, ::ffff:10.0.0.3"
	if codes, _ := sendAll(t, url, 6, "X-Forwarded-For", xff); codes != "200 200 200 200 200 429" {
		t.Fatalf("with ::ffff:10.0.0.0/104 trusted, 6 x GET %s [X-Forwarded-For: %s]: %s, want the client's own budget: 200 200 200 200 200 429",
			url, xff, codes)
	}
}
