package httplimit

import (
	"strings"
	"testing"
)

func TestBoundKey(t *testing.T) {
	a := strings.Repeat("a", 10000)
	b := strings.Repeat("a", 9999) + "b"
	ka, kb := BoundKey(a), BoundKey(b)
	if len(ka) > MaxKeyLength || !strings.HasPrefix(ka, BoundPrefix) {
		t.Errorf("BoundKey of a long key = %q", ka)
	}
	if ka == kb {
		t.Error("two long keys that differ share a bounded key")
	}
	if BoundKey(a) != ka {
		t.Error("BoundKey is not deterministic")
	}
}

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
}
