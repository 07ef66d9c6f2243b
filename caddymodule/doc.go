// Package caddymodule is windowlimit's Caddy module: the HTTP handler
// http.handlers.rate_limit and its Caddyfile directive rate_limit.
//
// Build Caddy with it through xcaddy from a checkout (or ./xcaddy.sh at
// the repository root), until the module is published with a version tag:
//
//	xcaddy build --with github.com/windowlimit/windowlimit/caddymodule \
//		--replace github.com/windowlimit/windowlimit=/path/to/windowlimit
//
// The directive accepts mholt/caddy-ratelimit's Caddyfile (zone, key,
// window, events, match, ipv4_prefix, ipv6_prefix, log_key, sweep_interval,
// jitter), with the same meaning, and adds sliding-window algorithms,
// rate-limit headers, dry runs and Prometheus metrics. The decisions are
// taken by the shared core in shared/ratelimit; a zone's in_flight slots
// by shared/inflight (inflight.go, inflight_config.go, inflight_admin.go,
// inflight_metrics.go).
package caddymodule
