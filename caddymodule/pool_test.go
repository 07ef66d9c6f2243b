package caddymodule

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
)

// provisionRaw provisions a handler the way a config load does, without
// tying its cleanup to the test, so a test can play a reload: provision the
// new config, then clean up the old.
func provisionRaw(t *testing.T, config string) *Handler {
	t.Helper()
	h := new(Handler)
	if err := json.Unmarshal([]byte(config), h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := h.Provision(ctx); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	h.logger = zap.NewNop()
	return h
}

func cleanupHandler(t *testing.T, h *Handler) {
	t.Helper()
	if err := h.Cleanup(); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
}

func TestReloadKeepsCounts(t *testing.T) {
	const config = `{"rate_limits":{"reload":{"window":"1m","limit":3}}}`
	old := provisionRaw(t, config)
	statuses(t, old, 2, "203.0.113.7", "/")

	// Reload: the new config is provisioned before the old one is cleaned up.
	cur := provisionRaw(t, config)
	cleanupHandler(t, old)
	if got := statuses(t, cur, 2, "203.0.113.7", "/"); !slices.Equal(got, []int{200, 429}) {
		t.Fatalf("after reload: %v, want [200 429]: the count was lost", got)
	}

	// A reload that changes the zone's rule starts it afresh.
	changed := provisionRaw(t, `{"rate_limits":{"reload":{"window":"1m","limit":4}}}`)
	cleanupHandler(t, cur)
	defer cleanupHandler(t, changed)
	if got := statuses(t, changed, 4, "203.0.113.7", "/"); !slices.Equal(got, []int{200, 200, 200, 200}) {
		t.Fatalf("after changing the limit: %v, want 4 x 200", got)
	}
}

func TestReloadKeepsCountsAcrossUnrelatedChanges(t *testing.T) {
	// Headers, matchers, jitter and log_key do not shape a zone's state.
	old := provisionRaw(t, `{"rate_limits":{"keep":{"window":"1m","limit":2}}}`)
	statuses(t, old, 2, "203.0.113.7", "/")
	cur := provisionRaw(t, `{"headers":"ietf","jitter":0.5,"log_key":true,
		"rate_limits":{"keep":{"window":"1m","limit":2,"match":[{"path":["/*"]}]}}}`)
	cleanupHandler(t, old)
	defer cleanupHandler(t, cur)
	if got := serve(t, cur, "203.0.113.7", "/").status; got != 429 {
		t.Fatalf("after reload: %d, want 429", got)
	}
}

func TestZoneSharedBetweenHandlers(t *testing.T) {
	// One zone name and rule in two handlers (two sites, say) is one count.
	a := provisionRaw(t, `{"rate_limits":{"shared":{"key":"static","window":"1m","limit":2}}}`)
	b := provisionRaw(t, `{"rate_limits":{"shared":{"key":"static","window":"1m","limit":2}}}`)
	defer cleanupHandler(t, a)
	defer cleanupHandler(t, b)
	serve(t, a, "203.0.113.7", "/")
	serve(t, b, "203.0.113.7", "/")
	if got := serve(t, a, "203.0.113.7", "/").status; got != 429 {
		t.Fatalf("third request over two handlers: %d, want 429", got)
	}
}

func TestReloadsLeakNoZoneOrGoroutine(t *testing.T) {
	before := sweepers()
	prev := provisionRaw(t, `{"rate_limits":{"leak":{"window":"1m","limit":1},"other":{"window":"1s","limit":1}}}`)
	for i := range 40 {
		// Half the reloads change a zone (a new state and sweeper), half
		// do not (the state is shared).
		window := "1m"
		if i%2 == 0 {
			window = "2m"
		}
		cur := provisionRaw(t, `{"rate_limits":{"leak":{"window":"`+window+`","limit":1},"other":{"window":"1s","limit":1}}}`)
		serve(t, cur, "203.0.113.7", "/")
		cleanupHandler(t, prev)
		prev = cur
	}
	if n := countZones("leak"); n != 1 {
		t.Errorf("%d states of zone leak in the pool after the reloads, want 1", n)
	}
	cleanupHandler(t, prev)
	if n := countZones("leak") + countZones("other"); n != 0 {
		t.Errorf("%d zone states left in the pool after the last cleanup, want 0", n)
	}
	// Close stops a sweeper asynchronously: give the goroutines a moment.
	deadline := time.Now().Add(5 * time.Second)
	for sweepers() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := sweepers(); after > before {
		t.Errorf("%d zone sweepers running after the last cleanup, %d before the reloads", after, before)
	}
}

// countZones returns how many zone states named name the pool holds.
func countZones(name string) int {
	n := 0
	zones.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), `"`+name+`" `) {
			n++
		}
		return true
	})
	return n
}

// sweepers counts the goroutines running a zone's sweeper.
func sweepers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "ratelimit.(*Zone).sweepEvery")
		}
		buf = make([]byte, 2*len(buf))
	}
}

func TestReloadIntoDryRunKeepsCounts(t *testing.T) {
	// dry_run does not shape a zone's state either: a reload into it and
	// back keeps the count.
	old := provisionRaw(t, `{"rate_limits":{"dry":{"window":"1m","limit":2}}}`)
	statuses(t, old, 2, "203.0.113.7", "/")
	dry := provisionRaw(t, `{"dry_run":true,"rate_limits":{"dry":{"window":"1m","limit":2}}}`)
	cleanupHandler(t, old)
	if res := serve(t, dry, "203.0.113.7", "/"); res.status != 200 || res.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("in dry run: %d with remaining %q, want 200 with 0", res.status, res.header.Get("X-RateLimit-Remaining"))
	}
	cur := provisionRaw(t, `{"rate_limits":{"dry":{"window":"1m","limit":2}}}`)
	cleanupHandler(t, dry)
	defer cleanupHandler(t, cur)
	if got := serve(t, cur, "203.0.113.7", "/").status; got != 429 {
		t.Fatalf("out of dry run: %d, want 429 (the count kept)", got)
	}
}
