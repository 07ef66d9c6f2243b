// Package ratelimit is the core of windowlimit: rules, the sliding-window
// algorithms, decisions, the in-memory store, the Redis store and the
// failure policy around it.
//
// Where things are:
//
//   - rule.go, decision.go: what a limit is and what a decision says.
//   - zone.go, shard.go, buckets.go, log.go: the in-memory store, where the
//     decision is taken: a zone per rule, sharded and bounded, with the
//     bucket algorithms (sliding, strict, fixed) and the exact log.
//   - store.go: the Store interface and several rules taken together.
//   - redisstore.go, redisscript.go, rediskey.go: the Redis store, one Lua
//     script per request over a ScriptRunner (go-redis in Caddy,
//     shared/resp in Traefik).
//   - guard.go, policy.go, breaker.go, denycache.go, errlog.go: what happens
//     when Redis fails or is slow.
//
// The package is loaded by Traefik's yaegi interpreter as well as compiled
// into Caddy, so it uses the standard library only and avoids what yaegi
// v0.16 cannot run. Under yaegi every call allocates the callee's locals
// and temporaries, so the per-request path is kept to few calls and few
// statements (see TakeAt and scripts/yaegitest).
//
// The calls the Traefik plugin makes on every request (TakeAt,
// TakeLimitAt, TakeRemote) are plain functions taking the zone or guard
// as their first argument, with no method form: under yaegi a method call
// costs several function calls, while compiled Go pays nothing for the
// plain form. Methods remain where an interface needs them (Store).
package ratelimit
