package traefikplugin

import (
	"context"
	"net/http"
	"testing"
)

// A reload that changes only what does not shape the counters
// (sourceCriterion's ipv6Subnet, headers, logKey, statusCode, message, or
// maxKeys written out at its default) keeps the counts, as
// docs/traefik.md says; changing maxKeys does not.
func TestReloadKeepsCountAcrossUnrelatedChanges(t *testing.T) {
	c := validConfig()
	c.Limit = 2
	h := newMiddleware(t, c, "unrelated@file")
	serve(h, "203.0.113.7:1", nil)
	serve(h, "203.0.113.7:1", nil)
	changed := validConfig()
	changed.Limit = 2
	changed.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{IPv6Subnet: 56}}
	changed.Headers = "both"
	changed.LogKey = true
	changed.StatusCode = 503
	changed.Message = "slow down"
	changed.MaxKeys = 100000
	h2, err := newChecked(context.Background(), okHandler, changed, "unrelated@file")
	if err != nil {
		t.Fatal(err)
	}
	if got := serve(h2, "203.0.113.7:1", nil).Code; got != 503 {
		t.Fatalf("third request after the reload: %d, want 503 (the count kept)", got)
	}
	changed.MaxKeys = 5000
	h3, err := newChecked(context.Background(), okHandler, changed, "unrelated@file")
	if err != nil {
		t.Fatal(err)
	}
	if got := serve(h3, "203.0.113.7:1", nil).Code; got != 200 {
		t.Fatalf("first request after a reload that changed maxKeys: %d, want 200 (a fresh zone)", got)
	}
}

// A reload into dry run and back keeps the count too: dry run lets the
// request over the limit through, with headers that say so, and counts
// nothing more.
func TestReloadIntoDryRunKeepsCount(t *testing.T) {
	c := validConfig()
	c.Limit = 2
	h := newMiddleware(t, c, "dry-reload@file")
	serve(h, "203.0.113.7:1", nil)
	serve(h, "203.0.113.7:1", nil)
	dry := validConfig()
	dry.Limit = 2
	dry.DryRun = true
	h2, err := newChecked(context.Background(), okHandler, dry, "dry-reload@file")
	if err != nil {
		t.Fatal(err)
	}
	w := serve(h2, "203.0.113.7:1", nil)
	if w.Code != 200 || w.Header().Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("third request, in dry run: %d with remaining %q, want 200 with 0", w.Code, w.Header().Get("X-Ratelimit-Remaining"))
	}
	h3, err := newChecked(context.Background(), okHandler, c, "dry-reload@file")
	if err != nil {
		t.Fatal(err)
	}
	if got := serve(h3, "203.0.113.7:1", nil).Code; got != 429 {
		t.Fatalf("fourth request, out of dry run: %d, want 429 (the count kept)", got)
	}
}

// A reload that keys on something else starts afresh, even where both
// keys give the same string: two headers are two zones, across a reload
// as across a restart (see keyScope).
func TestReloadOtherKeyStartsAfresh(t *testing.T) {
	byHeader := func(name string) *Config {
		c := validConfig()
		c.Limit = 1
		c.SourceCriterion = &SourceCriterion{RequestHeaderName: name}
		return c
	}
	h := newMiddleware(t, byHeader("X-Client"), "rekeyed@file")
	serve(h, "203.0.113.7:1", http.Header{"X-Client": {"alice"}})
	if got := serve(h, "203.0.113.7:1", http.Header{"X-Client": {"alice"}}).Code; got != 429 {
		t.Fatalf("second request: %d, want 429", got)
	}
	h2, err := New(context.Background(), okHandler, byHeader("X-User"), "rekeyed@file")
	if err != nil {
		t.Fatal(err)
	}
	if got := serve(h2, "203.0.113.7:1", http.Header{"X-User": {"alice"}}).Code; got != 200 {
		t.Fatalf("first request keyed on X-User after the reload: %d, want 200 (another zone)", got)
	}
}
