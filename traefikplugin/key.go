package traefikplugin

import (
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/windowlimit/windowlimit/shared/httplimit"
)

// The bound on a key and the start of its bounded form, as package
// constants (see Performance under yaegi). boundEnd is the least string
// above every one that starts with boundPrefix, its last byte one more:
// k starts with boundPrefix exactly when boundPrefix <= k < boundEnd, two
// comparisons that cost the interpreter less than a slice of k.
const (
	maxKeyLength = httplimit.MaxKeyLength
	boundPrefix  = httplimit.BoundPrefix
	boundEnd     = "sha256;"
)

type sourceKind uint8

const (
	sourceIP sourceKind = iota
	sourceHeader
	sourceHost
	// sourceDepth is no keySource's kind: it is Middleware.keyKind for
	// an ipStrategy with a depth, which sourceKey finds in one switch.
	sourceDepth
)

// fallbackPrefix starts the key of a request whose source finds nothing
// (see keyOf): one NUL, then a letter. A key that itself starts with a NUL
// gets one more, so no request data can spell a fallback key and keys stay
// distinct; the bounded form of either (httplimit.BoundKey) starts with
// "sha256:", never with a NUL, and hashes a different string. Caddy's
// keyless fallback is built the same way (caddymodule/key.go).
const fallbackPrefix = "\x00remote_addr:"

// fallbackLog receives the line that a middleware's source found nothing:
// Traefik's ERROR level (see errorLog).
var fallbackLog = errorLog

// keySource is a validated SourceCriterion: it computes a request's key.
// It is safe for concurrent use.
//
// A request whose source finds nothing (the header is missing or empty,
// X-Forwarded-For is shorter than the depth, every entry is excluded, the
// host is empty) is counted by its remote address, IPv6 grouped by the
// ipStrategy's ipv6Subnet (/64 for a header or the host), under
// fallbackPrefix: each client apart, where Traefik's built-in middleware
// puts them all in one count, which one client can use up for everyone.
// The first such request of a middleware instance says so in the log.
type keySource struct {
	kind   sourceKind
	ip     *ipStrategy
	header string // canonical header name
	// middleware names the middleware in the fallback's log line; New
	// sets it. Each instance has a keySource of its own (see validate),
	// whose logged is set once it has logged.
	middleware string
	logged     int32
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

// keyScope names what a middleware's keys mean, for its zone's snapshot
// and registry id: the source, and for an IP strategy which address it
// takes. How IPv6 addresses are grouped is not in it: a key grouped
// otherwise is another string. s is nil for the remote address. A
// snapshot goes back only into a zone of the same scope.
func keyScope(s *keySource) string {
	if s == nil {
		return "remoteAddr"
	}
	switch s.kind {
	case sourceHeader:
		return "requestHeaderName=" + s.header
	case sourceHost:
		return "requestHost"
	}
	scope := "ipStrategy depth=" + strconv.Itoa(s.ip.depth) + " excludedIPs="
	for i, p := range s.ip.excluded {
		if i > 0 {
			scope += ","
		}
		scope += p.String()
	}
	return scope
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
// or its bounded form (see httplimit.BoundKey); when the source finds
// nothing, the fallback key of its remote address (see oddKey). It is a
// plain function, not a method (see Performance under yaegi).
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
	if k < "\x01" {
		// Empty, or a NUL first: one comparison for both, so that a key
		// found pays no more than the test for none.
		return oddKey(s, r, k)
	}
	if len(k) > maxKeyLength || len(k) >= len(boundPrefix) && k[:len(boundPrefix)] == boundPrefix {
		return httplimit.BoundKey(k)
	}
	return k
}

// oddKey is keyOf for a key k that is empty or starts with a NUL. An
// empty one means the source found nothing: the request is counted by its
// remote address under fallbackPrefix, and the first such request of the
// middleware instance logs why. A key that starts with a NUL gets one
// more, out of the fallback's namespace, before bounding.
func oddKey(s *keySource, r *http.Request, k string) string {
	if k != "" {
		return httplimit.BoundKey("\x00" + k)
	}
	if atomic.LoadInt32(&s.logged) == 0 && atomic.CompareAndSwapInt32(&s.logged, 0, 1) {
		io.WriteString(fallbackLog, "windowlimit: warning: middleware "+strconv.Quote(s.middleware)+": "+foundNothing(s, r)+
			"; such requests are counted by their remote address instead, apart from every other key (logged once per middleware instance)\n")
	}
	v6Bits := httplimit.DefaultIPv6Prefix
	if s.ip != nil {
		v6Bits = s.ip.v6Bits
	}
	return httplimit.BoundKey(fallbackPrefix + addrKey(r.RemoteAddr, v6Bits))
}

// foundNothing says which setting of s found nothing in r, and why.
func foundNothing(s *keySource, r *http.Request) string {
	switch s.kind {
	case sourceHeader:
		return "sourceCriterion.requestHeaderName found nothing: the request has no " + s.header + " header, or an empty one"
	case sourceHost:
		return "sourceCriterion.requestHost found nothing: the request has no host"
	}
	what := "sourceCriterion.ipStrategy.excludedIPs found no client address: "
	if s.ip.depth > 0 {
		what = "sourceCriterion.ipStrategy.depth " + strconv.Itoa(s.ip.depth) + " found no client address: "
	}
	entries := 0
	for _, line := range r.Header[headerXFF] {
		entries += strings.Count(line, ",") + 1
	}
	switch {
	case entries == 0:
		return what + "the request has no X-Forwarded-For (Traefik drops it from peers outside the entry point's forwardedHeaders.trustedIPs)"
	case entries < s.ip.depth:
		return what + "X-Forwarded-For has fewer entries than the depth"
	case s.ip.depth > 0:
		return what + "the X-Forwarded-For entry at that depth is empty"
	case entries > maxForwardedHops:
		return what + "each of the " + strconv.Itoa(maxForwardedHops) + " rightmost X-Forwarded-For entries is excluded or empty"
	}
	return what + "every X-Forwarded-For entry is excluded or empty"
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

// source returns the key source of sc; for the remote address (sc nil,
// or an ipStrategy of neither depth nor excludedIPs) it returns nil and
// the prefix length IPv6 addresses are grouped by.
func (sc *SourceCriterion) source() (*keySource, int, error) {
	src, err := newKeySource(sc)
	if err != nil {
		return nil, 0, err
	}
	if src.isRemoteAddr() {
		return nil, src.ipv6Prefix(), nil
	}
	return src, 0, nil
}
