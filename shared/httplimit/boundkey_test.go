package httplimit

import (
	"net/http"
	"strings"
	"testing"
)

// TestBoundFormComesOnlyFromHashing: a client that sends the bounded form
// of another client's long key literally must not share its count.
func TestBoundFormComesOnlyFromHashing(t *testing.T) {
	long := strings.Repeat("k", MaxKeyLength+1)
	forged := BoundKey(long)
	if got := BoundKey(forged); got == forged || !strings.HasPrefix(got, "sha256:") || len(got) != len(forged) {
		t.Errorf("BoundKey(%q) = %q, want another digest: a literal key must not equal the bounded form of a long key", forged, got)
	}
	for _, k := range []string{"sha256:", "sha256:x", "sha256"[:6], "Sha256:x", "sha256x"} {
		got := BoundKey(k)
		if want := strings.HasPrefix(k, "sha256:"); (got != k) != want {
			t.Errorf("BoundKey(%q) = %q: hashed %v, want %v", k, got, got != k, want)
		}
	}

	s, err := NewSource(SourceCriterion{RequestHeaderName: "X-Key"})
	if err != nil {
		t.Fatal(err)
	}
	key := func(v string) string { return KeyOf(s, &http.Request{Header: http.Header{"X-Key": {v}}}) }
	if a, b := key(long), key(forged); a == b {
		t.Errorf("header %q and the %d-byte header share the key %q", forged, len(long), a)
	}
}
