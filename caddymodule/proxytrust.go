package caddymodule

import (
	"reflect"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

// warnSpoofableClientIP warns, once per provision, when zones of h tell
// clients apart by a client IP the client can choose, or match it against
// CIDR overrides: their server takes it from the leftmost X-Forwarded-For
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

// takesLeftmostClientIP reports whether srv takes the client IP of a
// request from a trusted proxy from the leftmost valid address of its
// client IP headers (X-Forwarded-For by default), which the client may
// have sent already filled in: it trusts proxies (trusted_proxies, or
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
	f := reflect.ValueOf(srv).Elem().FieldByName("trustedProxies")
	return f.IsValid() && f.Kind() == reflect.Interface && !f.IsNil()
}
