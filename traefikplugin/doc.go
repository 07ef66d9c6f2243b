// Package traefikplugin is windowlimit's Traefik middleware plugin: a
// sliding-window rate limiter that Traefik v3 loads from source with its
// yaegi interpreter.
//
// Traefik calls CreateConfig, hands the middleware's dynamic configuration
// to the result (every option lands in Config.Options: labels give every
// value as a string), then calls New once per router and again on every
// reload of the dynamic configuration. New decodes the options itself
// (decode.go) and never fails: a configuration it cannot build gives a
// middleware that refuses every request with 500 (misconfigured.go),
// since a failed New would let another router serve the route unlimited.
// Limiter state lives in a package-level registry keyed by the
// middleware's name, so counts survive reloads.
//
// The plugin's log lines go to Traefik's own log, at DEBUG or ERROR (see
// debugLog and errorLog), and each says whether it is an error, a warning
// or information.
//
// Only the standard library and this module are imported.
//
// # Files
//
//   - config.go: Config, the dynamic configuration, and CreateConfig.
//   - decode.go: the options Traefik hands over, decoded into Config.
//   - misconfigured.go: the middleware of a configuration New cannot build.
//   - settings.go: the Config checked, with its defaults (validate).
//   - unknown.go: the options of each block; one that matches none is
//     refused with a suggestion.
//   - duration.go: durations read as Traefik reads them.
//   - errors.go: the errors of bad settings, and the core's field names.
//   - middleware.go: Middleware, its fields grouped by what they serve,
//     and New.
//   - serve.go: ServeHTTP and the paths a request takes, with their table,
//     choosePath, which chooses a middleware's once, and handlerOf, the
//     handler of each path that New returns.
//   - headers.go: the rate-limit headers, written from tables.
//   - key.go: the key of a request: sourceCriterion, keyOf, the fallback.
//   - keyclientip.go: the client address: ipStrategy, the remote address.
//   - keymemory.go: the memory path's keys: keyOf's common cases, cheaper.
//   - keyoverrides.go: the key and client address that overrides match.
//   - overrides.go: the overrides list and its path, serveOverridden.
//   - countstatus.go: countStatus, its path serveCounted, statusRecorder.
//   - store.go: a store in place of the zone, and its decisions.
//   - redis.go: the Redis clients and guards, shared and reused on reload.
//   - redisconfig.go: the redis block checked.
//   - lease.go: the lease tables of hot keys, one per middleware name.
//   - inflight.go: inFlight, the slots of a key, in front of the rate or
//     alone; its limiters, one per middleware name.
//   - registry.go: the zones, one per middleware name, kept across reloads.
//   - log.go: the writers that reach Traefik's log, and the middleware's
//     lines: dry run, rejection, full zone.
//
// # Performance under yaegi
//
// Traefik interprets the plugin, and the interpreter's costs shape the
// request path. Measured in scripts/yaegitest (go test -bench
// 'Interpreted|PluginConfigs'; BenchmarkInterpretedCosts times each kind
// of statement):
//
//   - A call allocates a frame with a slot for every local and temporary
//     of the callee, taken branches or not. So a function costs more the
//     bigger it is, and a rare case goes to a callee. But each call is a
//     frame too, so a hot function is not split.
//   - So New returns, for each path, a handler of its own (handlerOf in
//     serve.go): Traefik's call lands on that path's frame alone, not on
//     one that holds every path's locals.
//   - A sum assigned to a declared variable is written in place, where
//     one that defines it (:=) costs a slot more; a call's result always
//     has its slot.
//   - A method call, or a call through an interface, costs several
//     function calls: the request path calls plain functions that take
//     the *Middleware, and reaches Redis through redisstore.TakeKey with
//     the store's call prepared for the zone (redisstore.KeyCall).
//   - A slice expression costs a slot and a copy through reflect: each
//     header value is a one-element literal of its own, where slicing one
//     literal of every value cost an allocation more, and time.
//   - A call into the standard library costs a few hundred nanoseconds:
//     what does not depend on the request is computed in New.
//   - A constant or type of another package costs a frame slot, one of
//     this package nothing: the header names and key bounds are declared
//     here, and other packages name Decision and Duration through aliases
//     of their own.
//
// Each path of serve.go therefore does only what its middleware needs,
// and functions shaped this way say so with "see Performance under yaegi".
package traefikplugin
