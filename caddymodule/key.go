package caddymodule

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/windowlimit/windowlimit/shared/httplimit"
)

// defaultKey is the key of a zone that sets none: the client IP as Caddy
// determines it (honouring trusted_proxies).
const defaultKey = "{http.vars.client_ip}"

// emptyKeyPrefix marks the fallback key of a request whose key is empty:
// one NUL, then a letter. A placeholder can yield a NUL (a query value of
// %00), so of gives every other key that starts with a NUL one more: no
// request data can spell a fallback key, and keys stay distinct.
const emptyKeyPrefix = "\x00client_ip:"

// keySource turns a request into its key in one zone. The common templates
// (the client IP, a single placeholder, a static string) skip the general
// replacer, which builds a new string on every call.
type keySource struct {
	template    string
	clientIP    bool   // the template is the client IP placeholder
	placeholder string // the template is exactly this one placeholder
	static      bool   // the template has no placeholder
	v4, v6      int    // prefix bits for grouping addresses (see mask)
}

// newKeySource returns the key source of a template and the zone's
// ipv4_prefix (0 or 32: addresses apart) and ipv6_prefix (0:
// httplimit.DefaultIPv6Prefix; 128: addresses apart).
func newKeySource(template string, v4, v6 int) keySource {
	if template == "" {
		template = defaultKey
	}
	if v4 == 32 {
		v4 = 0
	}
	if v6 == 0 {
		v6 = httplimit.DefaultIPv6Prefix
	}
	k := keySource{template: template, v4: v4, v6: v6}
	switch {
	case template == defaultKey:
		k.clientIP = true
	case !strings.ContainsAny(template, "{}"):
		k.static = true
	case isSinglePlaceholder(template):
		k.placeholder = template[1 : len(template)-1]
	}
	return k
}

// scope names what k's keys mean, for the zone's snapshot and pool key:
// its template. {remote_host} and {client_ip} are two scopes, even where
// they give the same string. The prefixes that group addresses are not
// in it: an address grouped otherwise is another string.
func (k *keySource) scope() string { return k.template }

// needsReplacer reports whether of needs the request's replacer.
func (k *keySource) needsReplacer() bool { return !k.clientIP && !k.static }

// readsClientIP reports whether the client IP can tell k's keys apart:
// the template holds it, or the template may come out empty, and the key
// then falls back to it (see of).
func (k *keySource) readsClientIP() bool {
	return k.clientIP || strings.Contains(k.template, defaultKey) || !k.static && mayBeEmpty(k.template)
}

// mayBeEmpty reports whether template may come out empty: it is nothing
// but placeholders, none of them the connection's address, which every
// request has. Literal text, an escaped brace included, is never empty.
func mayBeEmpty(template string) bool {
	for t := template; t != ""; {
		end := strings.IndexByte(t, '}')
		if t[0] != '{' || end < 0 || strings.HasPrefix(t[1:end], "http.request.remote") {
			return false
		}
		t = t[end+1:]
	}
	return true
}

// isSinglePlaceholder reports whether s is one placeholder and nothing else.
func isSinglePlaceholder(s string) bool {
	return len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' &&
		strings.Count(s, "{") == 1 && strings.Count(s, "}") == 1 &&
		!strings.Contains(s, `\`)
}

// of returns r's key. An empty value falls back to the client IP under
// emptyKeyPrefix; addresses are grouped by prefix (IPv6 by /64 unless
// configured otherwise); a key that starts with a NUL gets one more, out
// of the fallback's namespace; a key longer than httplimit.MaxKeyLength
// is replaced by its digest.
func (k *keySource) of(r *http.Request, repl *caddy.Replacer) string {
	var s string
	switch {
	case k.clientIP:
		s = clientIP(r)
	case k.static:
		s = k.template
	case repl == nil:
		// Outside Caddy's server (never in practice): nothing to replace.
	case k.placeholder != "":
		s, _ = repl.GetString(k.placeholder)
	default:
		s = repl.ReplaceAll(k.template, "")
	}
	if s == "" {
		return emptyKeyPrefix + k.mask(clientIP(r))
	}
	if s[0] == 0 {
		// Before bounding, so that the escaped key is bounded too (its
		// bounded form starts with "sha256:", never with a NUL).
		s = "\x00" + s
	}
	return httplimit.BoundKey(k.mask(s))
}

// mask groups s by prefix when s is an address: IPv6 always (by /64
// unless told otherwise), IPv4 when ipv4_prefix is set; an IPv4-mapped
// address is IPv4. Without a colon s is no IPv6 address, so IPv4 keys and
// most others skip parsing.
func (k *keySource) mask(s string) string {
	if k.v4 == 0 && strings.IndexByte(s, ':') < 0 {
		return s
	}
	return httplimit.MaskIP(s, k.v4, k.v6)
}

// clientIP returns the client IP Caddy's server recorded for r.
func clientIP(r *http.Request) string {
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	return ip
}

// clientAddr returns the client IP Caddy's server recorded for r, parsed:
// the address CIDR overrides match. It is the zero Addr when there is
// none (outside Caddy's server).
func clientAddr(r *http.Request) netip.Addr {
	a, _ := netip.ParseAddr(clientIP(r))
	return a
}
