package traefikplugin

import (
	"net/http"
	"net/textproto"
	"strings"

	"github.com/windowlimit/windowlimit/shared/httplimit"
)

// The bound on a key and the start of its bounded form, as package
// constants: under yaegi a constant of another package costs a frame slot
// where one of this package costs nothing.
const (
	maxKeyLength = httplimit.MaxKeyLength
	boundPrefix  = httplimit.BoundPrefix
)

type sourceKind uint8

const (
	sourceIP sourceKind = iota
	sourceHeader
	sourceHost
)

// keySource is a validated SourceCriterion: it computes a request's key.
// It is immutable and safe for concurrent use.
//
// A request whose source is empty (the header is missing, X-Forwarded-For
// is shorter than the depth, every entry is excluded) gets the key "": all
// such requests share one limit, as with Traefik's built-in middleware.
type keySource struct {
	kind   sourceKind
	ip     *ipStrategy
	header string // canonical header name
}

// newKeySource validates sc and returns its keySource; a nil sc is the
// remote address. Every bad value is reported with the full name of its
// setting; more than one criterion is an error naming them.
func newKeySource(sc *SourceCriterion) (*keySource, error) {
	if sc == nil {
		sc = &SourceCriterion{}
	}
	var ip *ipStrategy
	if c := sc.IPStrategy; c != nil {
		var err error
		if ip, err = newIPStrategy(c.Depth, c.ExcludedIPs, c.IPv6Subnet); err != nil {
			return nil, err
		}
	}
	n := 0
	if ip != nil {
		n++
	}
	if sc.RequestHeaderName != "" {
		n++
	}
	if sc.RequestHost {
		n++
	}
	if n > 1 {
		return nil, fieldError("sourceCriterion", "ipStrategy, requestHeaderName and requestHost are mutually exclusive: set one")
	}
	switch {
	case sc.RequestHeaderName != "":
		name := strings.TrimSpace(sc.RequestHeaderName)
		if !validHeaderName(name) {
			return nil, fieldError("sourceCriterion.requestHeaderName", quoteValue(sc.RequestHeaderName)+" is not a valid header name")
		}
		return &keySource{kind: sourceHeader, header: textproto.CanonicalMIMEHeaderKey(name)}, nil
	case sc.RequestHost:
		return &keySource{kind: sourceHost}, nil
	case ip != nil:
		return &keySource{kind: sourceIP, ip: ip}, nil
	}
	return &keySource{kind: sourceIP, ip: &ipStrategy{v6Bits: httplimit.DefaultIPv6Prefix}}, nil
}

// isRemoteAddr reports whether the key is the remote address, IPv6
// grouped by ipv6Prefix: ServeHTTP computes it inline (see addrKey).
func (s *keySource) isRemoteAddr() bool {
	return s.kind == sourceIP && s.ip.depth == 0 && s.ip.excluded == nil
}

// ipv6Prefix returns the prefix length an IP source groups IPv6 addresses
// by (128: not grouped), and 0 for the other sources.
func (s *keySource) ipv6Prefix() int {
	if s.kind != sourceIP {
		return 0
	}
	return s.ip.v6Bits
}

// keyOf returns the key of r, at most httplimit.MaxKeyLength bytes long,
// or its bounded form (see httplimit.BoundKey). It is a plain function,
// not a method: under yaegi a method call costs several function calls.
func keyOf(s *keySource, r *http.Request) string {
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
	if len(k) > maxKeyLength || len(k) >= len(boundPrefix) && k[:len(boundPrefix)] == boundPrefix {
		return httplimit.BoundKey(k)
	}
	return k
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
