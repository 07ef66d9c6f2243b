package caddymodule

import (
	"strconv"
	"testing"
)

// TestIntegrationFallbackKeyCannotBeForged sends the forged fallback key
// through a real Caddy server: a query value "\x00client_ip:127.0.0.1"
// must not use up the budget of the keyless clients at 127.0.0.1.
func TestIntegrationFallbackKeyCannotBeForged(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	tc.InitServer(siteConfig(port, `rate_limit {
		zone forge {
			key    {query.api_key}
			window 1m
			limit  1
		}
	}`), "caddyfile")
	base := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	if resp, body := get(t, tc, base+"?api_key=%00client_ip:127.0.0.1"); resp.StatusCode != 200 {
		t.Fatalf("forged key: %d %q, want 200", resp.StatusCode, body)
	}
	if resp, body := get(t, tc, base); resp.StatusCode != 200 {
		t.Errorf("keyless client after the forged key: %d %q, want 200 (its own count)", resp.StatusCode, body)
	}
	if resp, _ := get(t, tc, base); resp.StatusCode != 429 {
		t.Errorf("keyless client, second request: %d, want 429", resp.StatusCode)
	}
}
