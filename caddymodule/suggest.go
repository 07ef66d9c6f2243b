package caddymodule

import (
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/windowlimit/windowlimit/shared/optname"
)

// The subdirectives of each Caddyfile block, as UnmarshalCaddyfile reads
// them: what a misspelled one is compared with.
var (
	handlerSubdirectives = []string{"zone", "store", "on_store_error", "headers", "max_keys",
		"sweep_interval", "jitter", "persist", "dry_run", "log_key"}
	zoneSubdirectives = []string{"key", "window", "sub_window", "limit", "events", "override",
		"algorithm", "cost", "ipv4_prefix", "ipv6_prefix", "count_status", "match",
		"in_flight", "in_flight_ttl", "ban"}
	redisSubdirectives = []string{"address", "url", "addresses", "sentinel", "sentinel_username",
		"sentinel_password", "username", "password", "db", "tls", "dial_timeout", "timeout",
		"pool_size", "key_prefix", "lease"}
	redisTLSSubdirectives = []string{"ca", "cert", "key", "server_name", "insecure_skip_verify"}
	persistSubdirectives  = []string{"directory", "interval"}
	globalSubdirectives   = []string{"store", "on_store_error"}
)

// unknownSubdirective returns the error of the dispenser's token, a
// subdirective of the block named by prefix ("store redis: ", or "" when
// the caller names the block) that is none of known. It gives hint (where
// the token belongs) when there is one, else the nearest known
// subdirective when the token is near enough to be a typo, else every
// known one: the message says what to write instead.
func unknownSubdirective(d *caddyfile.Dispenser, prefix string, known []string, hint string) error {
	name := d.Val()
	if hint != "" {
		return d.Errf("%sunknown subdirective %q (%s)", prefix, name, hint)
	}
	if near := nearestSubdirective(name, known); near != "" {
		return d.Errf("%sunknown subdirective %q (did you mean %q?)", prefix, name, near)
	}
	return d.Errf("%sunknown subdirective %q (want one of %s)", prefix, name, strings.Join(known, ", "))
}

// handlerHint says where name belongs, written in a rate_limit block
// where it is unknown, or "".
func handlerHint(name string) string {
	switch {
	case slices.Contains(zoneSubdirectives, name):
		return name + " is a zone's setting: put it inside zone <name> { ... }"
	case slices.Contains(redisSubdirectives, name):
		return name + " is a Redis setting: put it inside store redis { ... }"
	}
	return ""
}

// globalHint says where name belongs, written in the rate_limit global
// option where it is unknown, or "".
func globalHint(name string) string {
	if slices.Contains(handlerSubdirectives, name) || slices.Contains(zoneSubdirectives, name) {
		return "only store and on_store_error are set here; zones belong in each site's rate_limit"
	}
	return ""
}

// zoneHint says where name belongs, written in a zone where it is
// unknown, or "".
func zoneHint(name string) string {
	if slices.Contains(handlerSubdirectives, name) {
		return name + " applies to the whole rate_limit block: put it beside the zones, not in one"
	}
	if _, err := caddy.GetModule("http.matchers." + name); err == nil {
		return name + " is a request matcher: put it inside match { ... }"
	}
	return ""
}

// nearestSubdirective returns the known subdirective nearest to name when
// it is near enough to be a typo, comparing without case, or "" (the
// rule of the Traefik plugin's options: optname.Nearest).
func nearestSubdirective(name string, known []string) string {
	same, near := optname.Nearest(name, known)
	if same != "" {
		return same
	}
	return near
}
