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
// by shared/inflight.
//
// # Files
//
//   - handler.go: Handler, its Provision, Validate and Cleanup, and
//     ServeHTTP: the zones' items collected (collect), decided (decide),
//     the request rejected (reject).
//   - zone.go: Zone, the configuration of one zone, and zoneState, its
//     provisioned state.
//   - key.go: the key of a request, from a placeholder template.
//   - override.go: the limit of a request's key: overrides and the limit
//     placeholder (limitOf).
//   - countstatus.go: count_status: a request reserved, then refunded by
//     its status (serveCounted, statusRecorder).
//   - ban.go: the ban of a zone, its admin view and its metric.
//   - inflight.go: in_flight: the slots a request takes (serveInFlight),
//     and the limiters.
//   - inflight_config.go: the in_flight settings checked, and a zone of
//     in_flight alone.
//   - inflight_admin.go: the admin API's in-flight slots.
//   - inflight_metrics.go: the in-flight gauge.
//   - pool.go: the zones of the loaded configs, kept across reloads.
//   - persist.go: persist: zones' counts saved to files and restored.
//   - fileowner.go: who owns a snapshot file, for the persist package.
//   - redis.go: RedisConfig, and the Redis stores shared across reloads.
//   - redis_gredis.go: the go-redis script runner.
//   - redis_pipeline.go: the concurrent script calls sent as pipelines.
//   - caddyfile.go: the rate_limit directive and its zone blocks.
//   - caddyfile_redis.go: the redis block.
//   - caddyfile_global.go: the rate_limit global option, its defaults.
//   - caddyfile_check.go: the settings that only fail together, blamed
//     on the line to change.
//   - suggest.go: the subdirectives of each block; one that matches none
//     is refused with a suggestion.
//   - fields.go: the core's field names as the configs spell them.
//   - proxytrust.go: the trusted proxies, and the warnings of a client IP
//     the client can choose, or of overrides over trusted proxies.
//   - admin.go: the admin API: the zones, and a key's state and reset.
//   - adminzones.go: the handlers and stores of each zone, for the API.
//   - adminlimit.go: the limit of a key as the API reports it.
//   - metrics.go: the Prometheus metrics.
//   - log.go: the denial and full-zone log lines.
package caddymodule
