package caddymodule

import (
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/shared/httplimit"
)

// TestForgedBoundKey: a header that is literally the bounded form of
// another client's long key has a count of its own.
func TestForgedBoundKey(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"key":"{http.request.header.X-Key}","window":"1m","limit":1}}}`)
	long := strings.Repeat("k", httplimit.MaxKeyLength+1)
	if got := serve(t, h, "203.0.113.7", "/", "X-Key", long).status; got != 200 {
		t.Fatalf("long key: %d, want 200", got)
	}
	if got := serve(t, h, "203.0.113.8", "/", "X-Key", httplimit.BoundKey(long)).status; got != 200 {
		t.Errorf("the long key's digest sent literally: %d, want 200 (a count of its own)", got)
	}
}

// TestFallbackKeyCannotBeForged: a placeholder value that spells the
// fallback key of the keyless clients at an address ("\x00client_ip:" and
// the address) has a count of its own; it cannot use up theirs.
func TestFallbackKeyCannotBeForged(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"api":{"key":"{http.request.uri.query.api_key}","window":"1m","limit":1}}}`)
	forged := "/?api_key=%00client_ip:203.0.113.7"
	if got := serve(t, h, "198.51.100.9", forged).status; got != 200 {
		t.Fatalf("forged key, first request: %d, want 200", got)
	}
	if got := serve(t, h, "203.0.113.7", "/").status; got != 200 {
		t.Errorf("keyless client at 203.0.113.7 after the forged key: %d, want 200 (its own count)", got)
	}
	if got := serve(t, h, "198.51.100.9", forged).status; got != 429 {
		t.Errorf("forged key, second request: %d, want 429 (the forged key is limited as any key)", got)
	}
	// The escape is injective: keys that differ only in leading NULs stay apart.
	if got := serve(t, h, "198.51.100.9", "/?api_key=%00%00client_ip:203.0.113.7").status; got != 200 {
		t.Errorf("a key with one more NUL: %d, want 200 (a key of its own)", got)
	}
}
