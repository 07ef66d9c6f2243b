package caddymodule

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// lookup is one key under which a zone may count the requests an admin
// request names.
type lookup struct {
	key string
	// fallback is set for the fallback key of the requests from the named
	// address whose key came out empty (see keySource.of).
	fallback bool
	// client is the client address of the requests counted under key, when
	// the admin request tells it: the zone keys on the client IP, or key is
	// a fallback key. CIDR overrides match it.
	client netip.Addr
}

// lookups returns the keys under which the zone may hold key: key as each
// of its handlers' groupings makes it, so that a plain IP address finds
// its /64 (or configured prefix); and when key is an address and a
// handler's key may come out empty, the fallback key of that address,
// under which its keyless requests are counted.
func (u *zoneUse) lookups(key string) []lookup {
	addr, err := netip.ParseAddr(key)
	isAddr := err == nil
	if !isAddr {
		_, err := netip.ParsePrefix(key)
		isAddr = err == nil // a /64: an address, but no single client
	}
	var out []lookup
	add := func(l lookup) {
		if !slices.ContainsFunc(out, func(o lookup) bool { return o.key == l.key }) {
			out = append(out, l)
		}
	}
	for _, g := range u.groupings {
		l := lookup{key: g.mask(key)}
		if u.keysAreClientIP {
			l.client = addr
		}
		add(l)
	}
	if isAddr && u.mayFallBack {
		for _, g := range u.groupings {
			add(lookup{key: emptyKeyPrefix + g.mask(key), fallback: true, client: addr})
		}
	}
	return out
}

// Where the limit of a key comes from, in the admin API's limit_source.
const (
	limitFromZone     = "zone"
	limitFromOverride = "override"
	limitFromTier     = "tier"
	limitFromVaries   = "varies"
)

// keyLimit is the limit of one key, as the admin API reports it.
type keyLimit struct {
	limit     int64 // the key's limit; the zone's when unknown
	unlimited bool
	source    string
	note      string
}

// limitOf returns the limit of the requests counted under l. It is the
// limit the zone's handlers would give them (see Handler.limitOf), or
// the zone's own limit with a note when that cannot be known outside a
// request.
func (u *zoneUse) limitOf(l lookup) keyLimit {
	zoneLimit := u.zone.Rule().Limit
	var found []keyLimit
	for _, s := range u.states {
		kl := keyLimit{limit: zoneLimit, source: limitFromZone}
		if s.overrides != nil {
			if n, ok := s.overrides.Match(l.key, l.client); ok {
				kl.source = limitFromOverride
				if n == ratelimit.Unlimited {
					kl.unlimited = true
				} else {
					kl.limit = n
				}
				found = append(found, kl)
				continue
			}
			if s.overrides.HasCIDRs() && !l.client.IsValid() {
				kl.note = "a CIDR override applies if the client's address is in it: ask with the client's address"
			}
		}
		if s.limitFrom != "" {
			kl.source = limitFromTier
			kl.note = "the limit comes from {" + s.limitFrom + "} on each request, which only a request knows: limit and remaining are against the zone's fallback limit"
		}
		found = append(found, kl)
	}
	if len(found) == 0 {
		return keyLimit{limit: zoneLimit, source: limitFromZone}
	}
	for _, kl := range found[1:] {
		if kl != found[0] {
			return keyLimit{limit: zoneLimit, source: limitFromVaries,
				note: "handlers sharing this zone give the key different limits: limit and remaining are against the zone's"}
		}
	}
	return found[0]
}

// mayFallBack reports whether k's key may come out empty and fall back to
// the client IP (see of).
func (k *keySource) mayFallBack() bool {
	return !k.clientIP && !k.static && mayBeEmpty(k.template) && !strings.Contains(k.template, defaultKey)
}
