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
