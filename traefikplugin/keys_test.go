package traefikplugin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/shared/httplimit"
)

// TestForgedBoundKey: a header that is literally the bounded form of
// another client's long key has a count of its own.
func TestForgedBoundKey(t *testing.T) {
	c := validConfig()
	c.Limit = 1
	c.SourceCriterion = &SourceCriterion{RequestHeaderName: "X-Key"}
	h := newMiddleware(t, c, "boundkey@file")
	long := strings.Repeat("k", httplimit.MaxKeyLength+1)
	if w := serve(h, "203.0.113.7:1", http.Header{"X-Key": {long}}); w.Code != 200 {
		t.Fatalf("long key: %d, want 200", w.Code)
	}
	if w := serve(h, "203.0.113.8:1", http.Header{"X-Key": {httplimit.BoundKey(long)}}); w.Code != 200 {
		t.Errorf("the long key's digest sent literally: %d, want 200 (a count of its own)", w.Code)
	}
}

// TestExcludedMappedRange: excludedIPs in IPv4-mapped form exclude their
// IPv4 addresses, so the client behind them is the key.
func TestExcludedMappedRange(t *testing.T) {
	c := validConfig()
	c.Limit = 1
	c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"::ffff:10.0.0.0/104"}}}
	h := newMiddleware(t, c, "mapped@file")
	if w := serve(h, "10.0.0.9:1", http.Header{"X-Forwarded-For": {"198.51.100.1, 10.0.0.1"}}); w.Code != 200 {
		t.Fatalf("first request: %d", w.Code)
	}
	if w := serve(h, "10.0.0.9:1", http.Header{"X-Forwarded-For": {"198.51.100.2, ::ffff:10.0.0.2"}}); w.Code != 200 {
		t.Errorf("another client behind a mapped proxy address: %d, want 200 (the proxy is excluded)", w.Code)
	}
	if w := serve(h, "10.0.0.9:1", http.Header{"X-Forwarded-For": {"198.51.100.1, 10.0.0.3"}}); w.Code != 429 {
		t.Errorf("the first client again, through another proxy: %d, want 429", w.Code)
	}
}

// TestBoundEnd: k starts with boundPrefix exactly when it sorts from
// boundPrefix to before boundEnd, as headerKey and hostKey test it.
func TestBoundEnd(t *testing.T) {
	n := len(boundPrefix)
	if boundEnd != boundPrefix[:n-1]+string(boundPrefix[n-1]+1) {
		t.Fatalf("boundEnd %q is not boundPrefix %q with its last byte one more", boundEnd, boundPrefix)
	}
	for _, k := range []string{"", "s", "sha256", "sha256:", "sha256:x", "sha256;", "sha256;x", "sha2569", "sha256\xff", "sha256:\xff", "SHA256:x", "sha255:x", "sha257", "\x00", "\xff"} {
		if got := k >= boundPrefix && k < boundEnd; got != strings.HasPrefix(k, boundPrefix) {
			t.Errorf("%q: within [boundPrefix, boundEnd) %v, prefixed %v", k, got, !got)
		}
	}
}
