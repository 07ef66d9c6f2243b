package traefikplugin

import (
	"net/http"
	"net/netip"
	"strings"
)

// The keys of the memory path (ServeHTTP's own body, see serve.go). Each
// function returns, for the common request of its source, the key keyOf
// would return, with less interpreted work, and calls keyOf for anything
// else: a key to bound, to group (IPv6), to normalize, or none found. The
// differential tests (memorypath_test.go and scripts/yaegitest) hold them
// to keyOf on random requests.

// plainKey reports whether keyOf would return k itself: not empty, no
// NUL first, short, no colon (so never "sha256:..." and never IPv6), and
// no bracket first (so normalizeIP keeps it: without a colon netip cannot
// parse it as an address and port).
func plainKey(k string) bool {
	return k >= "\x01" && len(k) <= maxKeyLength && k[0] != '[' && strings.IndexByte(k, ':') < 0
}

// sourceKey returns the memory path's key of a sourceCriterion.
func sourceKey(m *Middleware, r *http.Request) string {
	switch m.keyKind {
	case sourceDepth:
		if k := forwardedAt(r.Header[headerXFF], m.depth); plainKey(k) {
			return k
		}
		return keyOf(m.source, r)
	case sourceHeader:
		return headerKey(m, r)
	case sourceHost:
		return hostKey(m, r)
	}
	return excludedKey(m, r)
}

// headerKey is the key of requestHeaderName.
func headerKey(m *Middleware, r *http.Request) string {
	if v := r.Header[m.header]; len(v) > 0 {
		if k := v[0]; k >= "\x01" && len(k) <= maxKeyLength && (k < boundPrefix || k >= boundEnd) {
			return k
		}
	}
	return keyOf(m.source, r)
}

// hostKey is the key of requestHost.
func hostKey(m *Middleware, r *http.Request) string {
	if k := strings.ToLower(r.Host); k >= "\x01" && len(k) <= maxKeyLength && (k < boundPrefix || k >= boundEnd) {
		return k
	}
	return keyOf(m.source, r)
}

// excludedKey is the key of ipStrategy.excludedIPs when the rightmost
// entries are IPv4 addresses, checked against m.excluded4 (the IPv4
// ranges as pairs of address and mask); any other entry, an empty one, or
// running out of entries goes to keyOf.
func excludedKey(m *Middleware, r *http.Request) string {
	lines := r.Header[headerXFF]
	hops := 0
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for hops < maxForwardedHops {
			j := strings.LastIndexByte(line, ',')
			hops++
			e := strings.TrimSpace(line[j+1:])
			a, err := netip.ParseAddr(e)
			if err != nil || !a.Is4() {
				return keyOf(m.source, r)
			}
			b := a.As4()
			v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
			if !inRanges(m.excluded4, v) {
				return e
			}
			if j < 0 {
				break
			}
			line = line[:j]
		}
	}
	return keyOf(m.source, r)
}

// inRanges reports whether v is in one of the ranges, pairs of a masked
// address and its mask.
func inRanges(ranges []uint32, v uint32) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if v&ranges[i+1] == ranges[i] {
			return true
		}
	}
	return false
}

// excludedIPv4 returns the IPv4 ranges of s as pairs of masked address
// and mask. An IPv6 range never holds an IPv4 address (isExcluded unmaps
// the addresses it checks; parseRange the ranges).
func excludedIPv4(s *ipStrategy) []uint32 {
	var out []uint32
	for _, p := range s.excluded {
		if !p.Addr().Is4() {
			continue
		}
		b := p.Addr().As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		mask := uint32(0)
		if p.Bits() > 0 {
			mask = ^uint32(0) << (32 - p.Bits())
		}
		out = append(out, v&mask, mask)
	}
	return out
}

// remoteKey is ServeHTTP's key of an IPv6 remote address or one without a
// port, apart so that ServeHTTP's frame stays small.
func remoteKey(m *Middleware, r *http.Request) string {
	return addrKeyRest(r.RemoteAddr, m.v6Bits)
}
