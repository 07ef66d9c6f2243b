package traefikplugin

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// overriddenKey returns the key of r and the client address its CIDR
// overrides match: for an ipStrategy, the address it picks, before
// grouping by ipv6Subnet (when it picks none, see standInAddr); for the
// other sources, the remote address; never the key, which a client
// chooses. The address is the zero Addr when there is none, or when m has
// no CIDR. The key is the one addrKey or keyOf computes; for an address,
// it comes from the same parse.
func overriddenKey(m *Middleware, r *http.Request) (string, netip.Addr) {
	if !m.cidrs {
		if m.source == nil {
			return addrKey(r.RemoteAddr, m.v6Bits), netip.Addr{}
		}
		return keyOf(m.source, r), netip.Addr{}
	}
	if m.source != nil && m.source.kind != sourceIP {
		a, _ := netip.ParseAddr(remoteHost(r.RemoteAddr))
		return keyOf(m.source, r), a
	}
	var ip string
	v6Bits := m.v6Bits
	if m.source == nil {
		ip = remoteHost(r.RemoteAddr)
	} else {
		ip, v6Bits = pickIP(m.source.ip, r), m.source.ip.v6Bits
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		// No address (none found, or junk): the key as written.
		if m.source == nil {
			return addrKey(r.RemoteAddr, m.v6Bits), a
		}
		key := keyOf(m.source, r)
		if ip == "" {
			return key, standInAddr(m, r, key)
		}
		return key, a
	}
	key := ip
	if strings.IndexByte(ip, ':') >= 0 {
		key = httplimit.MaskAddr(a, ip, 0, v6Bits) // IPv6 grouped, IPv4-mapped as IPv4
	}
	if m.source != nil {
		key = httplimit.BoundKey(key) // as keyOf: a zone can make an address long
	}
	return key, a
}

// standInAddr returns the address the CIDR overrides of m match for a
// request with the key key whose ipStrategy picked no address: the remote
// address the request is then counted by (see keyOf), when the override
// it matches there lowers the limit; otherwise the zero Addr, which
// matches no CIDR. Behind proxies the remote address is the nearest
// proxy's, often in a private range that an override exempts for the
// clients inside it: a request that came through fewer proxies than the
// depth, or from a client in excludedIPs, must not be exempted, nor given
// a higher limit, by the proxy's address. A lower limit for the address
// it comes from still applies.
func standInAddr(m *Middleware, r *http.Request, key string) netip.Addr {
	a, err := netip.ParseAddr(remoteHost(r.RemoteAddr))
	if err != nil {
		return netip.Addr{}
	}
	if n, ok := m.overrides.Match(key, a); !ok || n == ratelimit.Unlimited || n >= m.zone.Rule().Limit {
		return netip.Addr{}
	}
	return a
}
