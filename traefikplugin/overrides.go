package traefikplugin

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// overrides parses the overrides list against the normalized rule r:
// entries "<key or CIDR>=<limit>|unlimited", where an IP address or a
// CIDR matches the client address (see overriddenKey). A label hands the
// list over as one comma-separated string or already split: both are
// accepted. The last '=' splits an entry, so that a key may hold '='
// (base64 padding).
func overrides(list []string, r ratelimit.Rule) (*ratelimit.Overrides, error) {
	var ovs []ratelimit.Override
	for _, v := range list {
		for _, e := range strings.Split(v, ",") {
			e = strings.TrimSpace(e)
			i := strings.LastIndexByte(e, '=')
			if i <= 0 {
				return nil, fieldError("overrides", "entry "+quoteValue(e)+" must be <key or CIDR>=<limit> or <key or CIDR>=unlimited")
			}
			n, err := ratelimit.ParseOverrideLimit(e[i+1:])
			if err != nil {
				return nil, fieldError("overrides", "entry "+quoteValue(e)+": "+err.Error())
			}
			ovs = append(ovs, ratelimit.Override{Key: e[:i], Limit: n})
		}
	}
	o, err := ratelimit.NewOverrides(r, ovs)
	if err != nil {
		return nil, fieldError("overrides", err.Error())
	}
	return o, nil
}

// serveOverridden serves a request of a middleware with overrides: an
// exempt request goes straight on, without headers; another gets its own
// limit, or the rule's.
func serveOverridden(m *Middleware, w http.ResponseWriter, r *http.Request) {
	key, client := overriddenKey(m, r)
	limit, _ := m.overrides.Match(key, client)
	if limit == ratelimit.Unlimited {
		m.next.ServeHTTP(w, r)
		return
	}
	if m.countStatus != nil {
		serveCountedLimit(m, w, r, key, limit)
		return
	}
	var d ratelimit.Decision
	if m.store == nil {
		if limit > 0 {
			d = ratelimit.TakeLimitAt(m.zone, key, time.Now().UnixNano(), limit)
		} else {
			d = ratelimit.TakeAt(m.zone, key, time.Now().UnixNano())
		}
	} else {
		d = takeLimitFromStore(r.Context(), m, key, limit)
	}
	decided(m, w, r, key, d)
}

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

// takeLimitFromStore is takeFromStore for a key with its own limit.
func takeLimitFromStore(ctx context.Context, m *Middleware, key string, limit int64) ratelimit.Decision {
	if m.lease != nil {
		return lease.Take(m.lease, ctx, key, limit, time.Now())
	}
	items := []ratelimit.Item{{Zone: m.zone, Key: key, Limit: limit}}
	out := make([]ratelimit.Decision, 1)
	if _, err := m.store.Take(ctx, time.Now(), items, out); err != nil {
		return failOpen(m, limit)
	}
	return out[0]
}

// failOpen is the decision of a request whose store failed (see
// takeFromStore) under limit (0: the rule's).
func failOpen(m *Middleware, limit int64) ratelimit.Decision {
	r := m.zone.Rule()
	if limit <= 0 {
		limit = r.Limit
	}
	return ratelimit.Decision{Allowed: true, Limit: limit, Remaining: limit - r.Cost}
}
