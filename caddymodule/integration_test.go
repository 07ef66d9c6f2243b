package caddymodule

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"
)

// These tests run Caddy in this process (caddytest), on free loopback
// ports, and drive it over HTTP. caddytest starts one Caddy per process, so
// its admin port is chosen once.

var (
	adminPortOnce sync.Once
	adminPort     int
)

// freePort returns a TCP port that was free on the loopback a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// newTester returns a caddytest tester on this process's admin port. The
// in-process Caddy keeps its autosaved config and storage in a temporary
// directory, not in the user's.
func newTester(t *testing.T) *caddytest.Tester {
	t.Helper()
	adminPortOnce.Do(func() {
		adminPort = freePort(t)
		dir, err := os.MkdirTemp("", "caddymodule-test-")
		if err != nil {
			t.Fatal(err)
		}
		os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
		os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	})
	return caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort})
}

// siteConfig returns a Caddyfile serving body on port behind the given
// rate_limit block, with a handle_errors route that shows the placeholders.
func siteConfig(port int, rateLimit string) string {
	return fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	skip_install_trust
}
:%d {
	%s
	respond "ok"
	handle_errors 429 {
		respond "limited by {http.rate_limit.zone}, retry in {http.rate_limit.retry_after}s" 429
	}
}
`, adminPort, port, port, rateLimit)
}

// bareSite returns a Caddyfile serving the site body on port, with no
// handle_errors route.
func bareSite(port int, body string) string {
	return fmt.Sprintf("{\n\tadmin localhost:%d\n\thttp_port %d\n}\n:%d {%s}\n", adminPort, port, port, body)
}

func get(t *testing.T, tc *caddytest.Tester, url string) (*http.Response, string) {
	t.Helper()
	resp, err := tc.Client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestIntegrationLimitAndHandleErrors(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	tc.InitServer(siteConfig(port, `rate_limit {
		zone itest {
			window 1m
			limit 3
		}
	}`), "caddyfile")
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"

	for i := range 3 {
		resp, body := get(t, tc, url)
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q, want 200 ok", i+1, resp.StatusCode, body)
		}
		if got, want := resp.Header.Get("X-RateLimit-Remaining"), strconv.Itoa(2-i); got != want {
			t.Errorf("request %d: X-RateLimit-Remaining %q, want %q", i+1, got, want)
		}
	}
	resp, body := get(t, tc, url)
	if resp.StatusCode != 429 {
		t.Fatalf("fourth request: %d, want 429", resp.StatusCode)
	}
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || retry <= 0 {
		t.Errorf("Retry-After %q, want a positive number of seconds", resp.Header.Get("Retry-After"))
	}
	if want := "limited by itest, retry in " + strconv.Itoa(retry) + "s"; body != want {
		t.Errorf("handle_errors body %q, want %q", body, want)
	}
	if resp.Header.Get("X-RateLimit-Limit") != "3" || resp.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("rate-limit headers on the 429 response: %v", resp.Header)
	}
}

func TestIntegrationRejectionWithoutErrorRoutes(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	tc.InitServer(bareSite(port, `
	rate_limit {
		zone inoerr {
			window 1m
			limit 1
		}
	}
	respond "ok"
`), "caddyfile")
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	if resp, _ := get(t, tc, url); resp.StatusCode != 200 {
		t.Fatalf("first request: %d, want 200", resp.StatusCode)
	}
	resp, body := get(t, tc, url)
	if resp.StatusCode != 429 || body != "" {
		t.Fatalf("second request: %d %q, want 429 with an empty body, as Caddy writes an unhandled error", resp.StatusCode, body)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra <= 0 {
		t.Errorf("Retry-After %q, want a positive number of seconds", resp.Header.Get("Retry-After"))
	}
	if resp.Header.Get("X-RateLimit-Limit") != "1" || resp.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("rate-limit headers: %v", resp.Header)
	}
}

func TestIntegrationReloadKeepsCount(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	block := `rate_limit {
		zone ireload {
			window 1m
			limit 4
		}
	}`
	tc.InitServer(siteConfig(port, block), "caddyfile")
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	for range 3 {
		if resp, _ := get(t, tc, url); resp.StatusCode != 200 {
			t.Fatalf("before reload: %d, want 200", resp.StatusCode)
		}
	}
	// Reload with an unrelated change: the count must survive.
	tc.InitServer(strings.Replace(siteConfig(port, block), `respond "ok"`, `respond "ok again"`, 1), "caddyfile")
	resp, body := get(t, tc, url)
	if resp.StatusCode != 200 || body != "ok again" {
		t.Fatalf("after reload: %d %q, want 200 from the new config", resp.StatusCode, body)
	}
	if resp, _ := get(t, tc, url); resp.StatusCode != 429 {
		t.Fatalf("fifth request after reload: %d, want 429: the reload lost the count", resp.StatusCode)
	}
	if n := countZones("ireload"); n != 1 {
		t.Errorf("%d states of zone ireload after the reload, want 1", n)
	}
}

func TestIntegrationRejectsBadConfig(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	good := siteConfig(port, `rate_limit {
		zone ibad {
			window 1m
			limit 1
		}
	}`)
	tc.InitServer(good, "caddyfile")

	// A value the Caddyfile refuses, and the same in JSON, which only the
	// zone's provisioning refuses: neither leaves the route unlimited.
	adapted, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(good), nil)
	if err != nil {
		t.Fatal(err)
	}
	badJSON := strings.Replace(string(adapted), `"handler":"rate_limit"`, `"handler":"rate_limit","max_keys":20000000`, 1)
	if badJSON == string(adapted) {
		t.Fatalf("no rate_limit handler in %s", adapted)
	}
	for _, bad := range []struct{ config, typ, want string }{
		{strings.Replace(good, "limit 1", "limit 1\n\t\t\tsub_window 7s", 1), "text/caddyfile", "sub_window: 7s does not divide the window 1m0s"},
		{strings.Replace(good, "limit 1", "limit 1\n\t\t}\n\t\tmax_keys 20000000\n\t\tzone inone {\n\t\t\twindow 1m\n\t\t\tlimit 1", 1),
			"text/caddyfile", "max_keys: 20000000 is too large: at most 16777216"},
		{badJSON, "application/json", "max_keys: must be at most 16777216"},
	} {
		if status, msg := loadConfig(t, bad.config, bad.typ); status != http.StatusBadRequest || !strings.Contains(msg, bad.want) {
			t.Fatalf("loading a bad %s: %d %s; want 400 with %q", bad.typ, status, msg, bad.want)
		}
	}
	// The running config is untouched and still limits.
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	if r, _ := get(t, tc, url); r.StatusCode != 200 {
		t.Fatalf("after the rejected loads: %d, want 200", r.StatusCode)
	}
	if r, _ := get(t, tc, url); r.StatusCode != 429 {
		t.Fatalf("second request: %d, want 429", r.StatusCode)
	}
}

func TestIntegrationReloadsLeakNothing(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	config := func(limit int) string {
		return siteConfig(port, `rate_limit {
		zone ileak {
			window 1m
			limit `+strconv.Itoa(limit)+`
		}
	}`)
	}
	tc.InitServer(config(1), "caddyfile")
	before := sweepers()
	for i := range 20 {
		tc.InitServer(config(1+i%2), "caddyfile") // every reload changes the zone
	}
	tc.InitServer(config(1), "caddyfile")
	if n := countZones("ileak"); n != 1 {
		t.Errorf("%d states of zone ileak after 21 reloads, want 1", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for sweepers() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := sweepers(); after > before {
		t.Errorf("%d zone sweepers after 21 reloads, %d before", after, before)
	}
}

// Caddy's header replacements rewrite values in place: one response's
// replacement must not show in another's headers.
func TestIntegrationHeaderReplacementStaysInItsResponse(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	tc.InitServer(bareSite(port, `
	header /rewritten >X-RateLimit-Limit 100 hundred
	rate_limit {
		zone ireplace {
			window 1m
			limit 100
		}
	}
	respond "ok"
`), "caddyfile")
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	for range 2 {
		if resp, _ := get(t, tc, base+"/rewritten"); resp.Header.Get("X-RateLimit-Limit") != "hundred" {
			t.Fatalf("the replacement did not apply: X-RateLimit-Limit %q", resp.Header.Get("X-RateLimit-Limit"))
		}
		if resp, _ := get(t, tc, base+"/plain"); resp.Header.Get("X-RateLimit-Limit") != "100" {
			t.Errorf("X-RateLimit-Limit %q on a response without the replacement, want 100", resp.Header.Get("X-RateLimit-Limit"))
		}
	}
}
