//go:build !race

package e2e

import (
	"strconv"
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
)

// reloadSite is the site of TestE2EReload: a limit of 20 a minute, both
// header styles, and a body that tells which config answered.
const reloadSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
}
:{{.Web}} {
	bind 127.0.0.1
	rate_limit {
		zone e2e {
			window 1m
			sub_window 10s
			limit 20
		}
		headers both
	}
	respond "{{.Body}}"
}
`

// TestE2EReload sends 22 requests under a limit of 20 a minute, with a
// reload after the 10th: 20 x 200 then 429 with Retry-After, the count
// kept across the reload, and the metrics count every decision.
func TestE2EReload(t *testing.T) {
	c := newCaddy(t)
	c.render(reloadSite, map[string]any{"Body": "before reload"})
	c.start()
	for n := 1; n <= 22; n++ {
		if n == 11 {
			c.render(reloadSite, map[string]any{"Body": "after reload"})
			c.load()
		}
		req, resp := e2etest.Get(t, c.url("/"))
		h := resp.Header.Get
		if n <= 20 {
			if resp.Status != 200 || h("X-RateLimit-Remaining") != strconv.Itoa(20-n) {
				t.Fatalf("request %d: %v: %v, want 200 with X-RateLimit-Remaining %d", n, req, resp, 20-n)
			}
		} else {
			ra, err := strconv.Atoi(h("Retry-After"))
			if resp.Status != 429 || err != nil || ra < 1 || ra > 70 || h("X-RateLimit-Remaining") != "0" {
				t.Fatalf("request %d: %v: %v, want 429 with Retry-After 1..70 and X-RateLimit-Remaining 0", n, req, resp)
			}
		}
		if n > 10 && n <= 20 && resp.Body != "after reload" {
			t.Fatalf("request %d: %v: %v, want the body \"after reload\": the reload did not take", n, req, resp)
		}
		if h("X-RateLimit-Limit") != "20" || h("RateLimit-Policy") != `"e2e";q=20;w=60` {
			t.Fatalf("request %d: %v: %v, want X-RateLimit-Limit 20 and RateLimit-Policy \"e2e\";q=20;w=60", n, req, resp)
		}
	}

	for _, m := range []struct {
		name string
		want float64
	}{
		{`caddy_http_rate_limit_requests_total{decision="allowed",zone="e2e"}`, 20},
		{`caddy_http_rate_limit_requests_total{decision="denied",zone="e2e"}`, 2},
		{`caddy_http_rate_limit_keys{zone="e2e"}`, 1},
	} {
		if got, ok := metric(t, c, m.name); !ok || got != m.want {
			t.Errorf("GET %s: %s is %v (found %v), want %v; its rate_limit lines:\n%s",
				c.adminURL("/metrics"), m.name, got, ok, m.want, metricLines(t, c, "rate_limit"))
		}
	}
}
