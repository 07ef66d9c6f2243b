// Package redisstore is the Redis store: a ratelimit.Store that keeps the
// counts in Redis, so that every proxy sharing the Redis enforces one
// limit exactly. It is where Redis is spoken.
//
// One request is one call of one Lua script, atomic on the server and
// timed by its clock, over a ScriptRunner: go-redis in Caddy, shared/resp
// in Traefik. The store reports Redis's failures; a guard in front of it
// (the guard package) applies the failure policy. Leases (the lease
// package) ask the same script to count units ahead.
//
// # Under yaegi
//
// Traefik's yaegi interpreter runs the store on every request with a redis
// block, so that path is shaped by what the interpreter charges, where
// compiled Go pays nothing for the shape: a call allocates a slot for every
// local and temporary of the function called, branches taken or not, so
// the common request (one item at its rule's limit, through a runner that
// prepares calls) goes to takeOne and small tests are written out where
// they are used. The Traefik plugin's common request is TakeKey, which
// calls the runner and decodes the reply itself, and reads its guard's
// state from one word (guard.Signals) rather than calling it. A call through a func value costs about half one through
// an interface and a method call more still (scripts/yaegitest,
// BenchmarkInterpretedCosts), so the guard calls Take through TakeFunc and
// the store its runner through a func value; shared/resp's Client, the
// plugin's runner, it calls directly (resp.EvalPrepared), some 10
// allocations fewer again. yaegi does not run
// //go:embed, so each Lua script's Go string is generated from its file.
//
// # Files
//
//   - script.lua: the Lua script: its table of modes, its paths and its
//     key layouts; script_lua.go holds it as a Go string (go generate).
//   - script.go: the script's SHA1 and its modes.
//   - store.go: Store, New and Take: items, keys and replies.
//   - prepared.go: a zone's call encoded once (takeOne), and its reply.
//   - keycall.go: KeyCall and TakeKey, the Traefik plugin's common request
//     through its guard, written out.
//   - rule.go: a rule packed for the script, and CheckRule.
//   - key.go: the Redis key of a request's key, and HashTag.
//   - refund.go: Refund and GiveBack: counts and lease units given back.
//   - inspect.go: Inspect, Forget (an operator's reset) and the read script.
//   - settings.go: Settings, the defaults, the lease setting and their checks.
//   - slots.lua, slots.go: in-flight slots, one sorted set per key;
//     slots_lua.go holds the script as a Go string (go generate).
package redisstore
