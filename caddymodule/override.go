package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Override gives some requests of a zone a limit of their own. Set
// exactly one of Key and CIDR, and exactly one of Limit and Unlimited:
//
//	{"key": "gold-key", "limit": 600}
//	{"cidr": "10.0.0.0/8", "unlimited": true}
type Override struct {
	// Key is compared with the request's key after placeholder
	// replacement (and address grouping by ipv4_prefix and ipv6_prefix),
	// and must match it exactly. It cannot be an IP address or a CIDR:
	// those go in CIDR.
	Key string `json:"key,omitempty"`
	// CIDR matches every request whose client IP is inside it: the
	// address Caddy determined for {client_ip}, honouring the server's
	// trusted_proxies, before any grouping by ipv6_prefix. It never
	// matches the key, which the client may choose. A single address is a
	// CIDR of one address, and an IPv4-mapped IPv6 client matches as its
	// IPv4 address. An override that lifts the limit does not apply to a
	// client IP read from a client IP header that lies inside the
	// server's trusted_proxies (a proxy Caddy did not recognise, such as
	// ::ffff:10.0.0.3 behind 10.0.0.0/8): that request gets the zone's
	// limit.
	CIDR string `json:"cidr,omitempty"`
	// Limit is the limit per window of the matching requests.
	Limit int64 `json:"limit,omitempty"`
	// Unlimited exempts the matching requests: the zone neither counts
	// nor limits them, and sets no header for them.
	Unlimited bool `json:"unlimited,omitempty"`
}

// overrides checks the zone's overrides against its normalized rule and
// returns their matcher, nil when there are none.
func (z *Zone) overrides(rule ratelimit.Rule) (*ratelimit.Overrides, error) {
	if len(z.Overrides) == 0 {
		return nil, nil
	}
	list := make([]ratelimit.Override, 0, len(z.Overrides))
	for _, o := range z.Overrides {
		var ov ratelimit.Override
		switch {
		case o.Key != "" && o.CIDR != "":
			return nil, fmt.Errorf("override: set key or cidr, not both (%q, %q)", o.Key, o.CIDR)
		case o.Key != "":
			if strings.IndexByte(o.Key, '/') >= 0 {
				return nil, fmt.Errorf("override %s: a CIDR goes in cidr, not key", o.Key)
			}
			if _, err := netip.ParseAddr(o.Key); err == nil {
				return nil, fmt.Errorf("override %s: an address goes in cidr, not key (it matches the client IP, never the key)", o.Key)
			}
			ov.Key = o.Key
		case o.CIDR != "":
			if strings.IndexByte(o.CIDR, '/') < 0 {
				if _, err := netip.ParseAddr(o.CIDR); err != nil {
					return nil, fmt.Errorf("override %s: bad CIDR (want an address/length such as 10.0.0.0/8)", o.CIDR)
				}
			}
			ov.Key = o.CIDR
		default:
			return nil, errors.New("override: key or cidr is required")
		}
		switch {
		case o.Unlimited && o.Limit != 0:
			return nil, fmt.Errorf("override %s: set limit or unlimited, not both", ov.Key)
		case o.Unlimited:
			ov.Limit = ratelimit.Unlimited
		case o.Limit <= 0:
			return nil, fmt.Errorf("override %s: limit must be a positive integer (or set unlimited), got %d", ov.Key, o.Limit)
		default:
			ov.Limit = o.Limit
		}
		list = append(list, ov)
	}
	return ratelimit.NewOverrides(rule, list)
}

// limitPlaceholder returns the name inside the zone's limit placeholder,
// "" when the limit is static.
func (z *Zone) limitPlaceholder() (string, error) {
	p := z.LimitPlaceholder
	if p == "" {
		return "", nil
	}
	if !isSinglePlaceholder(p) {
		return "", fmt.Errorf("limit_placeholder %q must be one placeholder, such as {plan_limit}", p)
	}
	return p[1 : len(p)-1], nil
}

// badLimitEvery is the least time between two warnings about a zone's
// limit placeholder holding no valid limit.
const badLimitEvery = time.Minute

// limitOf returns the limit of a request with key in z: 0 for the rule's
// own, a positive N, or ratelimit.Unlimited when the zone skips it. An
// override of the key, or of a CIDR holding the client IP, wins over the
// limit placeholder; client holds the client IP once parsed, so that the
// zones of a request parse it once, and only when a zone has a CIDR. A
// placeholder value that is not a valid limit (see ratelimit.ValidLimit)
// falls back to the rule's limit, the zone's fallback, and is logged at
// most once a minute: a bad tier never lifts the limit.
//
// A CIDR override that lifts the limit does not apply to a client IP that
// is a trusted proxy Caddy read from a client IP header (see
// trustedProxies.proxyHop): that request gets the rule's limit. Such an
// address stands for every client behind that proxy, and an exempt
// internal range would exempt them all. An override that lowers the
// limit still applies: it can only hold a request tighter.
func (h *Handler) limitOf(z *zoneState, r *http.Request, key string, client *netip.Addr, repl *caddy.Replacer) int64 {
	if z.overrides != nil {
		if !client.IsValid() && z.overrides.HasCIDRs() {
			*client = clientAddr(r)
		}
		if n, ok := z.overrides.Match(key, *client); ok {
			if h.proxies == nil || !liftsLimit(z.zone.Rule(), n) || !h.proxies.proxyHop(r, *client) {
				return n
			}
			// A key override still applies: a key is no address.
			if n, ok := z.overrides.Match(key, netip.Addr{}); ok {
				return n
			}
			h.warnProxyHop(z, r, *client)
			return 0
		}
	}
	if z.limitFrom == "" || repl == nil {
		return 0
	}
	v, _ := repl.GetString(z.limitFrom)
	if n, ok := parseLimit(v); ok && ratelimit.ValidLimit(z.zone.Rule(), n) {
		return n
	}
	t := time.Now().UnixNano()
	if last := z.lastBadLimit.Load(); t-last >= int64(badLimitEvery) && z.lastBadLimit.CompareAndSwap(last, t) {
		if len(v) > 64 {
			v = v[:64]
		}
		h.logger.Warn("limit placeholder holds no valid limit; using the zone's fallback limit (logged at most once a minute)",
			zap.String("zone", z.name),
			zap.String("placeholder", "{"+z.limitFrom+"}"),
			zap.String("value", v),
			zap.Int64("fallback_limit", z.zone.Rule().Limit))
	}
	return 0
}

// proxyHopEvery is the least time between two warnings about a zone's
// client IP being a trusted proxy.
const proxyHopEvery = time.Minute

// warnProxyHop logs that a CIDR override did not lift a proxy's limit. It
// logs at most once a minute per zone, when the client IP client of r is
// a trusted proxy (see limitOf): its requests, and those of every client behind it, are
// held to the rule's limit under that proxy's key until trusted_proxies
// covers it as written.
func (h *Handler) warnProxyHop(z *zoneState, r *http.Request, client netip.Addr) {
	t := time.Now().UnixNano()
	if last := z.lastProxyHop.Load(); t-last < int64(proxyHopEvery) || !z.lastProxyHop.CompareAndSwap(last, t) {
		return
	}
	h.logger.Warn("client IP is a trusted proxy that Caddy did not recognise as one, so an override does not lift its limit: list it in trusted_proxies as written (an IPv4-mapped ::ffff:10.0.0.3 is outside 10.0.0.0/8 for Caddy: add ::ffff:10.0.0.0/104) (logged at most once a minute)",
		zap.String("zone", z.name),
		zap.String("client_ip", client.String()),
		zap.String("remote_addr", r.RemoteAddr),
		zap.Int64("limit", z.zone.Rule().Limit))
}

// parseLimit reads s as a decimal integer of at most 18 digits, without
// allocating on bad input as strconv does.
func parseLimit(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	n := int64(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
