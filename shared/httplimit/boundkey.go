package httplimit

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxKeyLength bounds the keys both hosts limit on: a longer key (a huge
// header, junk in X-Forwarded-For) is replaced by its bounded form (see
// BoundKey), so memory per tracked key stays bounded and distinct long
// keys stay distinct.
const MaxKeyLength = 256

// BoundPrefix starts the bounded form of a key (see BoundKey).
const BoundPrefix = "sha256:"

// BoundKey returns k when it is at most MaxKeyLength bytes long, and
// otherwise "sha256:" followed by the hex digest of k. A key that starts
// with "sha256:" is hashed too, whatever its length, so that the bounded
// form of a long key comes only from hashing: a client that sends the
// digest of another client's long key does not share its count.
func BoundKey(k string) string {
	if len(k) <= MaxKeyLength && !strings.HasPrefix(k, BoundPrefix) {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return BoundPrefix + hex.EncodeToString(sum[:])
}
