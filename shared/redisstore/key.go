package redisstore

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxKeyPart is the longest request key stored as is in a Redis key.
// A longer key, or one that starts with '#', is replaced by '#' and the
// hex SHA-256 of the key, so hostile keys cannot bloat Redis and a hashed
// key can never equal a plain one.
const MaxKeyPart = 128

// Key returns the Redis key that holds the counters of key in zone:
// prefix, zone name, ':' and the (possibly hashed) key in braces. The
// braces make the key its own Redis Cluster hash tag, so every rule of a
// request on the same key lands in one slot and one script call.
func Key(prefix, zone, key string) string {
	return prefix + zone + ":{" + keyPart(key) + "}"
}

// keyPart returns what stands for key inside the braces of its Redis
// key: key itself, or, for a long key or one that starts with '#', '#' and
// the hex SHA-256 of the key. takeOne and TakeKey write its test
// inline.
func keyPart(key string) string {
	if len(key) <= MaxKeyPart && !strings.HasPrefix(key, "#") {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "#" + hex.EncodeToString(sum[:])
}

// HashTag returns the part of a Redis key that Redis Cluster hashes: the
// text between the first '{' and the next '}' when it is not empty, the
// whole key otherwise.
func HashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}
