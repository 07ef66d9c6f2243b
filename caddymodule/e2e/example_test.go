//go:build !race

package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
)

// TestE2EExample runs Caddyfile.example as shipped, moved to free ports,
// and checks what its comments promise: the API's limit with a JSON 429,
// an API key's own budget, and failed logins counted alone.
// scripts/e2e-caddy.sh runs README's Caddy quickstart on it through the
// binary ./xcaddy.sh builds.
func TestE2EExample(t *testing.T) {
	example, err := os.ReadFile("../../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	// The example is a template's text: any "{{" in it stays as written.
	text := strings.ReplaceAll(string(example), "{{", "{{`{{`}}")
	moved := strings.Replace(text, "\n:8080 {\n", "\n:{{.Web}} {\n", 1)
	if moved == text {
		t.Fatal("Caddyfile.example has no site :8080 to move")
	}
	c := newCaddy(t)
	c.render("{\n\tadmin 127.0.0.1:{{.Admin}}\n\tpersist_config off\n}\n"+moved, nil)
	c.start()

	t.Run("the API: 10 x 200, then a JSON 429 naming the zone", func(t *testing.T) {
		for n := 1; n <= 10; n++ {
			if req, resp := e2etest.Get(t, c.url("/api/items")); resp.Status != 200 {
				t.Fatalf("request %d: %v: %v, want 200", n, req, resp)
			}
		}
		req, resp := e2etest.Get(t, c.url("/api/items"))
		if resp.Status != 429 || !strings.Contains(resp.Body, `"zone": "api"`) || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("11th request: %v: %v, want 429, Content-Type application/json, a body naming the zone \"api\"", req, resp)
		}
	})
	t.Run("an API key has its own budget", func(t *testing.T) {
		if req, resp := e2etest.Get(t, c.url("/api/items"), "X-API-Key", "team-a"); resp.Status != 200 {
			t.Fatalf("%v: %v, want 200", req, resp)
		}
	})
	t.Run("successful logins are not counted; 5 failed, then 429 even with the password", func(t *testing.T) {
		login := func(header ...string) (e2etest.Request, e2etest.Response) {
			r := e2etest.Request{Method: "POST", URL: c.url("/login"), Header: header}
			return r, e2etest.Do(t, r)
		}
		for n := 1; n <= 8; n++ {
			if req, resp := login("X-Password", "open-sesame"); resp.Status != 200 {
				t.Fatalf("successful login %d: %v: %v, want 200", n, req, resp)
			}
		}
		for n := 1; n <= 5; n++ {
			if req, resp := login(); resp.Status != 401 {
				t.Fatalf("failed login %d: %v: %v, want 401", n, req, resp)
			}
		}
		if req, resp := login("X-Password", "open-sesame"); resp.Status != 429 {
			t.Fatalf("login after 5 failures: %v: %v, want 429", req, resp)
		}
	})
}
