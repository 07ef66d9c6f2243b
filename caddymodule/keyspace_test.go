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
