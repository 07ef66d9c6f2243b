//go:build !race

package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// TestE2EReload: a limit of 20 a minute gives 20 x 200 with
// X-RateLimit-Remaining 19..0, then 429 with Retry-After, across a reload
// of the dynamic configuration after the 10th request that changes the
// message (so New ran again) and keeps the count.
func TestE2EReload(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	tr := traefiktest.New(t, traefiktest.Options{})
	tr.Render("fixtures/reload/dynamic.yml", map[string]any{"Backend": be.URL(), "Message": "limited before reload", "Reloaded": false})
	tr.Start("/plain")

	policy := regexp.MustCompile(`^"api-limit@file";q=20;w=60`)
	request := func(n int) {
		t.Helper()
		req, resp := e2etest.Get(t, tr.URL("/limited"))
		if resp.Header.Get("X-RateLimit-Limit") != "20" || !policy.MatchString(resp.Header.Get("RateLimit-Policy")) {
			t.Fatalf("request %d: %v: %v, want X-RateLimit-Limit 20 and RateLimit-Policy \"api-limit@file\";q=20;w=60", n, req, resp)
		}
		if n <= 20 {
			if resp.Status != 200 || resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(20-n) {
				t.Fatalf("request %d: %v: %v, want 200 with X-RateLimit-Remaining %d", n, req, resp, 20-n)
			}
			return
		}
		ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.Status != 429 || err != nil || ra < 1 || ra > 60 || resp.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Fatalf("request %d: %v: %v, want 429 with Retry-After 1..60 and X-RateLimit-Remaining 0", n, req, resp)
		}
		if strings.TrimSpace(resp.Body) != "limited after reload" {
			t.Fatalf("request %d: %v: %v, want the body \"limited after reload\": the reload did not reach the plugin", n, req, resp)
		}
	}
	for n := 1; n <= 10; n++ {
		request(n)
	}
	tr.Render("fixtures/reload/dynamic.yml", map[string]any{"Backend": be.URL(), "Message": "limited after reload", "Reloaded": true})
	if err := e2etest.GetRequest(tr.URL("/reloaded"), traefiktest.StartTimeout, e2etest.StatusIs(200)); err != nil {
		t.Fatalf("the reloaded configuration never became active: %v", err)
	}
	for n := 11; n <= 22; n++ {
		request(n)
	}
	if lines := tr.LogLines(`(?i)windowlimit.*error|plugin.*error`); len(lines) > 0 {
		t.Errorf("traefik logged plugin errors: %q", lines)
	}
}
