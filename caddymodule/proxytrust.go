package caddymodule

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// warnSpoofableClientIP warns when zones of h key on a client IP the
// client can choose. It warns once per provision, for zones that tell
// clients apart by that IP or match it against CIDR overrides: their
// server takes it from the leftmost X-Forwarded-For
// entry (see takesLeftmostClientIP), which the client writes itself, so
// one that sends a new fake address with every request gets a fresh
// budget every time, and one that sends an address inside an override
// gets that override's limit.
//
// The server is the one whose routes hold h: Caddy provisions each
// server's routes under a context that carries it. A handler provisioned
// outside a server (a test's context) has none and is not checked.
func (h *Handler) warnSpoofableClientIP(ctx caddy.Context) {
	srv, _ := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if srv == nil || !takesLeftmostClientIP(srv) {
		return
	}
	var zones []string
	for _, z := range h.zones {
		// A CIDR override matches the client IP too: a fake address
		// inside it would exempt the client or lift its limit.
		if z.key.readsClientIP() || z.overrides != nil && z.overrides.HasCIDRs() {
			zones = append(zones, z.name)
		}
	}
	if len(zones) == 0 {
		return
	}
	h.logger.Warn("client IP is spoofable: this server reads it from the leftmost entry of its client IP headers (X-Forwarded-For by default), which the client can write, so each fake address gets a fresh budget (or an override's limit); set trusted_proxies_strict in the server's options",
		zap.String("server", srv.Name()), zap.Strings("zones", zones), zap.Strings("client_ip_headers", srv.ClientIPHeaders))
}

// takesLeftmostClientIP reports whether srv takes a client IP the client
// may have written itself. That is the leftmost valid address of the
// client IP headers (X-Forwarded-For by default) of a request from a
// trusted proxy, which the client may have sent already filled in: srv
// trusts proxies (trusted_proxies, or
// trusted_proxies_unix) without trusted_proxies_strict, which reads
// them from the right, past the trusted proxies' own entries.
func takesLeftmostClientIP(srv *caddyhttp.Server) bool {
	if srv.TrustedProxiesStrict > 0 {
		return false
	}
	return srv.TrustedProxiesUnix || srv.TrustedProxiesRaw != nil || hasTrustedProxies(srv)
}

// hasTrustedProxies reports whether srv loaded a trusted_proxies source.
// Caddy keeps the source in an unexported field and drops its JSON
// (TrustedProxiesRaw) once loaded, before it provisions the server's
// routes, so the field is read here, for being nil only, which reflect
// allows without unsafe. If a Caddy release renamed it, this would
// report false: TestSpoofableClientIPWarning, which provisions a real
// config, fails then.
func hasTrustedProxies(srv *caddyhttp.Server) bool {
	f := trustedProxiesField(srv)
	return f.IsValid() && !f.IsNil()
}

// trustedProxiesField returns srv's trusted_proxies source (see
// hasTrustedProxies), read-only, or the zero Value if Caddy renamed it.
func trustedProxiesField(srv *caddyhttp.Server) reflect.Value {
	f := reflect.ValueOf(srv).Elem().FieldByName("trustedProxies")
	if !f.IsValid() || f.Kind() != reflect.Interface {
		return reflect.Value{}
	}
	return f
}

// provisionProxies reads the trusted ranges of h's server when a zone of
// h has a CIDR override, and warns about the overrides that overlap them.
func (h *Handler) provisionProxies(ctx caddy.Context) {
	srv, _ := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	for _, z := range h.zones {
		if z.overrides != nil && z.overrides.HasCIDRs() {
			h.proxies = newTrustedProxies(srv)
			h.warnOverridesOverlapProxies(srv, h.proxies)
			return
		}
	}
}

// trustedProxies tells whether an address is inside a server's
// trusted_proxies: an address that Caddy read from a client IP header
// and that is inside them is a proxy Caddy failed to recognise as one
// (see proxyHop), not a client.
//
// Caddy compares addresses with its ranges as written, so an IPv4-mapped
// hop (::ffff:10.0.0.3, as nginx and HAProxy write a peer on a dual-stack
// socket) is outside 10.0.0.0/8 for Caddy, which then reports that proxy
// as the client; overrides match it unmapped, as 10.0.0.3. Here an
// address is inside when either of its forms is.
type trustedProxies struct {
	// ranges are the server's static ranges (trusted_proxies static,
	// private_ranges included), as Caddy parsed them.
	ranges []netip.Prefix
	// srv, when its source is another module (ranges it fetches, which
	// may change), is asked through Caddy's own check instead.
	srv *caddyhttp.Server
}

// staticIPRange is the type of a trusted_proxies static source.
var staticIPRange = reflect.TypeOf((*caddyhttp.StaticIPRange)(nil))

// newTrustedProxies returns srv's trusted proxies, nil when it trusts no
// address range (none, or only trusted_proxies_unix). The ranges of a
// static source are read from its exported Ranges, through the unexported
// field that holds the source (see hasTrustedProxies): reflect reads
// them without unsafe, and calls no method.
func newTrustedProxies(srv *caddyhttp.Server) *trustedProxies {
	if srv == nil {
		return nil
	}
	f := trustedProxiesField(srv)
	if !f.IsValid() || f.IsNil() {
		return nil
	}
	src := f.Elem()
	if src.Type() != staticIPRange || src.IsNil() {
		return &trustedProxies{srv: srv}
	}
	list := src.Elem().FieldByName("Ranges")
	t := &trustedProxies{ranges: make([]netip.Prefix, 0, list.Len())}
	for i := 0; i < list.Len(); i++ {
		p, err := caddyhttp.CIDRExpressionToPrefix(list.Index(i).String())
		if err != nil {
			// Caddy provisioned the source, so never; were it
			// to happen, Caddy's own check answers instead.
			return &trustedProxies{srv: srv}
		}
		t.ranges = append(t.ranges, p)
	}
	return t
}

// proxyHop reports whether the client IP client of r is one of t's
// trusted proxies that Caddy read from a client IP header: it is not the
// connection's own address (r.RemoteAddr), and it is inside t (see
// contains). A client that connects from a trusted range itself, with no
// header Caddy took its address from, is no hop. It allocates nothing for
// a static source.
func (t *trustedProxies) proxyHop(r *http.Request, client netip.Addr) bool {
	client = client.WithZone("").Unmap()
	if remote, ok := remoteAddr(r.RemoteAddr); ok && remote == client {
		return false
	}
	return t.contains(client)
}

// contains reports whether a, an unmapped address without a zone, or its
// IPv4-mapped form, is inside t.
func (t *trustedProxies) contains(a netip.Addr) bool {
	m := a
	if a.Is4() {
		m = netip.AddrFrom16(a.As16())
	}
	if t.srv != nil {
		return trustedBy(t.srv, a) || m != a && trustedBy(t.srv, m)
	}
	for _, p := range t.ranges {
		if p.Contains(a) || p.Contains(m) {
			return true
		}
	}
	return false
}

// trustedBy reports whether srv trusts a connection from a, by Caddy's
// own check on a request from a with no header. It allocates a request
// and its context: it runs only for a source other than static, and only
// on a request whose client IP an override would lift the limit of.
func trustedBy(srv *caddyhttp.Server, a netip.Addr) bool {
	r := &http.Request{RemoteAddr: netip.AddrPortFrom(a, 0).String(), URL: &url.URL{}, Header: http.Header{}}
	r = caddyhttp.PrepareRequest(r, caddy.NewEmptyReplacer(), nil, srv)
	trusted, _ := caddyhttp.GetVar(r.Context(), caddyhttp.TrustedProxyVarKey).(bool)
	return trusted
}

// remoteAddr parses the host part of a connection's address as Caddy does
// (a zone dropped), unmapped; it reports false for one that is no IP
// address (a Unix socket's "@").
func remoteAddr(addr string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host, _, _ = strings.Cut(host, "%")
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// liftsLimit reports whether the override limit n gives a key of the
// normalized rule r more than r's limit: unlimited, or a higher limit.
func liftsLimit(r ratelimit.Rule, n int64) bool {
	return n == ratelimit.Unlimited || n > r.Limit
}

// warnOverridesOverlapProxies warns, once per provision, about each zone
// of h with a CIDR override that lifts the limit and overlaps the trusted
// ranges t: such an override applies to a client that connects from one
// of those addresses, never to one read from a client IP header (see
// proxyHop), which is a proxy Caddy did not recognise. Only a static
// source's ranges are known at load.
func (h *Handler) warnOverridesOverlapProxies(srv *caddyhttp.Server, t *trustedProxies) {
	if t == nil || len(t.ranges) == 0 {
		return
	}
	for _, z := range h.zones {
		cfg := h.RateLimits[z.name]
		if z.overrides == nil || !z.overrides.HasCIDRs() || cfg == nil {
			continue
		}
		rule := z.zone.Rule()
		var cidrs []string
		for _, o := range cfg.Overrides {
			n := o.Limit
			if o.Unlimited {
				n = ratelimit.Unlimited
			}
			p, ok := overridePrefix(o.CIDR)
			if !ok || !liftsLimit(rule, n) {
				continue
			}
			for _, r := range t.ranges {
				if prefixesOverlap(p, r) {
					cidrs = append(cidrs, o.CIDR)
					break
				}
			}
		}
		if len(cidrs) == 0 {
			continue
		}
		ranges := make([]string, len(t.ranges))
		for i, r := range t.ranges {
			ranges[i] = r.String()
		}
		h.logger.Warn("CIDR override overlaps trusted_proxies: it lifts the limit of clients that connect from there, never of such an address read from a client IP header, which is a proxy Caddy did not recognise as trusted (an IPv4-mapped hop such as ::ffff:10.0.0.3 is outside 10.0.0.0/8 for Caddy: list ::ffff:10.0.0.0/104 in trusted_proxies too)",
			zap.String("server", srv.Name()), zap.String("zone", z.name), zap.Strings("overrides", cidrs), zap.Strings("trusted_proxies", ranges))
	}
}

// overridePrefix parses an override's cidr (an address or a CIDR).
func overridePrefix(s string) (netip.Prefix, bool) {
	if s == "" {
		return netip.Prefix{}, false
	}
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.WithZone("")
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	p, err := netip.ParsePrefix(s)
	return p, err == nil
}

// prefixesOverlap reports whether a and b hold an address in common. They
// may, as written or through the IPv4 addresses their IPv4-mapped parts
// stand for (::ffff:10.0.0.0/104 and 10.0.0.0/8 overlap).
func prefixesOverlap(a, b netip.Prefix) bool {
	return a.Masked().Overlaps(b.Masked()) || ipv4Part(a).Overlaps(ipv4Part(b))
}

// mappedIPv4 is the IPv6 prefix of the IPv4-mapped addresses.
var mappedIPv4 = netip.MustParsePrefix("::ffff:0:0/96")

// ipv4Part returns the IPv4 addresses p holds, directly or IPv4-mapped,
// as one IPv4 prefix; the zero Prefix (which overlaps nothing) when it
// holds none.
func ipv4Part(p netip.Prefix) netip.Prefix {
	a := p.Addr()
	switch {
	case a.Is4():
		return p.Masked()
	case a.Is4In6() && p.Bits() >= 96:
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96).Masked()
	case p.Bits() < 96 && p.Contains(mappedIPv4.Addr()):
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	return netip.Prefix{}
}
