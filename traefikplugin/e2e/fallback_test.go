//go:build !race

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// TestE2EFallback: a source that finds nothing, on an instance that trusts
// no proxy (Traefik drops the client's X-Forwarded-For): middlewares with
// ipStrategy depth 1 and depth 2, limit 3. Client A (127.0.0.1) gets 200
// 200 200 429, then client B (127.0.0.2) gets 200: each is counted by its
// remote address, not in one count for all. Each middleware says so once
// in Traefik's log.
func TestE2EFallback(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	tr := start(t, traefiktest.Options{}, "fixtures/fallback/dynamic.yml", map[string]any{"Backend": be.URL(), "Depths": []int{1, 2}})

	for _, depth := range []int{1, 2} {
		t.Run(fmt.Sprintf("depth %d", depth), func(t *testing.T) {
			url := tr.URL(fmt.Sprintf("/depth%d/", depth))
			send := func(from string, header ...string) (e2etest.Request, e2etest.Response) {
				r := e2etest.Request{URL: url, From: from, Header: header}
				return r, e2etest.Do(t, r)
			}
			// Client A sends an X-Forwarded-For of its own: Traefik drops
			// it (no trusted proxy), so the middleware finds no entry.
			var codes []string
			var last e2etest.Request
			for range 4 {
				req, resp := send("127.0.0.1", "X-Forwarded-For", "198.51.100.1, 198.51.100.2")
				codes, last = append(codes, strconv.Itoa(resp.Status)), req
			}
			if got := strings.Join(codes, " "); got != "200 200 200 429" {
				t.Fatalf("client A, 4 x %v: %s, want 200 200 200 429", last, got)
			}
			if req, resp := send("127.0.0.2"); resp.Status != 200 {
				t.Fatalf("client B after A: %v: %v, want 200 (a count of its own, not one for all)", req, resp)
			}
			if req, resp := send("127.0.0.1"); resp.Status != 429 {
				t.Fatalf("client A again: %v: %v, want 429", req, resp)
			}
			re := fmt.Sprintf(`windowlimit: warning: middleware "depth%d-limit@file": sourceCriterion.ipStrategy.depth %d found no client address: the request has no X-Forwarded-For.*counted by their remote address instead`, depth, depth)
			tr.Logged(re, 2*time.Second)
			if lines := tr.LogLines(re); len(lines) != 1 {
				t.Fatalf("want one log line matching %q, got %q; the middleware's lines: %q", re, lines, tr.LogLines(fmt.Sprintf("depth%d-limit", depth)))
			}
		})
	}
}
