// Package ratelimit is the core of windowlimit: rules, the sliding-window
// algorithms, decisions and the in-memory store.
//
// The package is loaded by Traefik's yaegi interpreter as well as compiled
// into Caddy, so it uses the standard library only and avoids what yaegi
// v0.16 cannot run (see scripts/yaegitest). The per-request path keeps its
// interpreted statements few: a request on a known key is a shard lock, a map
// lookup and a handful of arithmetic on a counter ring.
package ratelimit
