package httplimit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/textproto"
	"strings"
)

// MaxKeyLength bounds the keys a Source returns: a longer key (a huge
// header, junk in X-Forwarded-For) is replaced by "sha256:" and the hex
// digest of the key, so memory per tracked key stays bounded and distinct
// long keys stay distinct.
const MaxKeyLength = 256

// boundPrefix starts the bounded form of a key (see BoundKey).
const boundPrefix = "sha256:"

// SourceCriterion chooses what a request is limited on, with the shape of
// Traefik's sourceCriterion: at most one of its fields may be set, and none
// means the remote address.
type SourceCriterion struct {
	// IPStrategy picks the client IP; see IPStrategy.
	IPStrategy *IPStrategy
	// RequestHeaderName limits on the first value of this request header.
	RequestHeaderName string
	// RequestHost limits on the request's host (as sent, lowercased).
	RequestHost bool
}

type sourceKind uint8

const (
	sourceIP sourceKind = iota
	sourceHeader
	sourceHost
)

// Source computes a request's key. It is immutable and safe for concurrent
// use.
//
// A request whose source is empty (the header is missing, X-Forwarded-For
// is shorter than the depth, every entry is excluded) gets the key "": all
// such requests share one limit, as with Traefik's built-in middleware.
type Source struct {
	kind   sourceKind
	ip     *IPStrategy
	header string // canonical header name
}

// NewSource validates c and returns its Source. More than one criterion is
// an error naming them.
func NewSource(c SourceCriterion) (*Source, error) {
	n := 0
	if c.IPStrategy != nil {
		n++
	}
	if c.RequestHeaderName != "" {
		n++
	}
	if c.RequestHost {
		n++
	}
	if n > 1 {
		return nil, errors.New("ipStrategy, requestHeaderName and requestHost are mutually exclusive: set one")
	}
	switch {
	case c.RequestHeaderName != "":
		name := strings.TrimSpace(c.RequestHeaderName)
		if !validHeaderName(name) {
			return nil, &FieldError{Field: "requestHeaderName", Msg: quote(c.RequestHeaderName) + " is not a valid header name"}
		}
		return &Source{kind: sourceHeader, header: textproto.CanonicalMIMEHeaderKey(name)}, nil
	case c.RequestHost:
		return &Source{kind: sourceHost}, nil
	case c.IPStrategy != nil:
		return &Source{kind: sourceIP, ip: c.IPStrategy}, nil
	}
	return &Source{kind: sourceIP, ip: &IPStrategy{v6Bits: DefaultIPv6Prefix}}, nil
}

// IsRemoteAddr reports whether the key is the remote address, IPv6 grouped
// by IPv6Prefix: callers on a hot path may compute it inline (see
// RemoteKey).
func (s *Source) IsRemoteAddr() bool {
	return s.kind == sourceIP && s.ip.depth == 0 && s.ip.excluded == nil
}

// IPv6Prefix returns the prefix length an IP source groups IPv6 addresses
// by (128: not grouped), and 0 for the other sources.
func (s *Source) IPv6Prefix() int {
	if s.kind != sourceIP {
		return 0
	}
	return s.ip.v6Bits
}

// KeyOf returns the key of r, at most MaxKeyLength bytes long. It is a
// plain function, not a method, for the Traefik plugin (see the package
// documentation).
func KeyOf(s *Source, r *http.Request) string {
	var k string
	switch s.kind {
	case sourceHeader:
		if v := r.Header[s.header]; len(v) > 0 {
			k = v[0]
		}
	case sourceHost:
		k = strings.ToLower(r.Host)
	default:
		k = clientIP(s.ip, r)
	}
	if len(k) > MaxKeyLength || len(k) >= len(boundPrefix) && k[:len(boundPrefix)] == boundPrefix {
		return BoundKey(k)
	}
	return k
}

// BoundKey returns k when it is at most MaxKeyLength bytes long, and
// otherwise "sha256:" followed by the hex digest of k. A key that starts
// with "sha256:" is hashed too, whatever its length, so that the bounded
// form of a long key comes only from hashing: a client that sends the
// digest of another client's long key does not share its count.
func BoundKey(k string) string {
	if len(k) <= MaxKeyLength && !strings.HasPrefix(k, boundPrefix) {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return boundPrefix + hex.EncodeToString(sum[:])
}

// validHeaderName reports whether s is a non-empty RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}
