package caddymodule

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
)

// TestIntegrationOverrideTrustedProxies: behind trusted_proxies, a CIDR
// override matches the client IP Caddy determined from X-Forwarded-For:
// not the address of the proxy (this test's client, 127.0.0.1), and not
// the key.
func TestIntegrationOverrideTrustedProxies(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	tc.InitServer(fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	skip_install_trust
	servers {
		trusted_proxies static 127.0.0.1/32
	}
}
:%d {
	rate_limit {
		zone proxied {
			key      {header.X-API-Key}
			window   1m
			limit    1
			override 10.0.0.0/8  unlimited
			override 127.0.0.0/8 unlimited
		}
	}
	respond "ok"
}
`, adminPort, port, port), "caddyfile")
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	send := func(xff, key string) (int, string) {
		t.Helper()
		r, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		r.Header.Set("X-API-Key", key)
		resp, err := tc.Client.Do(r)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-RateLimit-Limit")
	}
	for _, c := range []struct {
		xff, key string
		exempt   bool
	}{
		{"", "direct", true},               // client_ip 127.0.0.1
		{"10.1.2.3", "internal", true},     // client_ip 10.1.2.3
		{"203.0.113.7", "outside", false},  // the proxy's address is not the client's
		{"203.0.113.8", "10.1.2.3", false}, // nor is the key
	} {
		var got []int
		for range 3 {
			code, limit := send(c.xff, c.key)
			if c.exempt && limit != "" {
				t.Errorf("X-Forwarded-For %q, key %q: X-RateLimit-Limit %q on an exempt request", c.xff, c.key, limit)
			}
			got = append(got, code)
		}
		want := []int{200, 429, 429}
		if c.exempt {
			want = []int{200, 200, 200}
		}
		if !slices.Equal(got, want) {
			t.Errorf("X-Forwarded-For %q, key %q: %v, want %v", c.xff, c.key, got, want)
		}
	}
}
