//go:build !race

package e2e

import (
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// TestE2EOperatorLog: what an operator reads in Traefik's log at DEBUG (the
// plugin's dry-run lines are DEBUG entries): a dry-run line names the key
// only with logKey, and a zone that evicts keys that still counted says
// so (the sweeper of a 1 s window runs every second).
func TestE2EOperatorLog(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	tr := start(t, traefiktest.Options{LogLevel: "DEBUG"}, "fixtures/ops/dynamic.yml", map[string]any{"Backend": be.URL()})

	for _, path := range []string{"/dry", "/drykey"} {
		for i := 1; i <= 2; i++ {
			if req, resp := e2etest.Get(t, tr.URL(path), "X-K", "secret-key-7"); resp.Status != 200 {
				t.Fatalf("dry run, request %d: %v: %v, want 200 (let through)", i, req, resp)
			}
		}
	}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		e2etest.Get(t, tr.URL("/full"), "X-K", "flood-"+k)
	}
	checks := []struct{ what, re string }{
		{"a dry-run line without the key for dry-limit", `dry run: middleware "dry-limit@file" would reject a request`},
		{"a dry-run line with the key for drykey-limit (logKey)", `drykey-limit@file.*would reject key.*secret-key-7`},
		{"a full-zone line for full-limit", `full-limit@file.*zone full \(maxKeys 2\): evicted [0-9]* keys that still counted`},
	}
	for _, c := range checks {
		if !tr.Logged(c.re, 5*time.Second) {
			t.Errorf("no log line matching %q (%s); the plugin's lines:\n%q", c.re, c.what, tr.LogLines("windowlimit"))
		}
	}
	if lines := tr.LogLines(`dry-limit@file.*secret-key-7`); len(lines) > 0 {
		t.Errorf("dry-limit logged the key without logKey: %q", lines)
	}
}
