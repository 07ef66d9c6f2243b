// Package inflight keeps at most n requests of a key in flight: a slot is
// taken when a request is admitted and freed when its response is done.
//
// A Table holds the slots of one zone in this instance's memory: a key's
// entry exists only while it holds slots, so the table is bounded by the
// requests running, and by MaxKeys, past which a fresh key is refused
// (never admitted without a slot). A Limiter puts a Table, and with Redis
// a Remote (one set of slots per key for the whole fleet), behind one
// Take and Release: it renews the slots this instance holds in Redis
// every TTL/3 while their requests run, releases them off the request's
// path, and applies the store's failure policy when Redis fails. A slot
// whose holder stops renewing it (killed, partitioned) is free after the
// TTL; nothing else frees a slot early but an operator's reset.
//
// TakeWith takes a request's slot and decides its rate together: with the
// slots in Redis, in the rate's own script call (ratelimit.SlotTaker), so
// that a request of a zone with a rate and in_flight costs two calls, the
// take and the release; a request refused a slot counts nothing, and one
// the rate refuses holds no slot.
//
// The package is loaded by Traefik's yaegi interpreter as well as compiled
// into Caddy. Under yaegi every call and method call costs allocations,
// so the plugin's memory path is two plain functions with the table's work
// written out, TakeMemory and ReleaseMemory (414 interpreted allocations a
// request beside a rate, against 622 through Take and Release:
// docs/costs.md, PluginConfigs/inFlight); Take and Release call them.
// Tried as methods, they and httplimit.WriteHeaders cost 50 allocations
// a request more (scripts/yaegitest, PluginConfigs/inFlight-alone).
// The interpreter (yaegi v0.16) lacks Go 1.21's builtins min, max and
// clear: the package writes them out.
//
// # Files
//
//   - table.go: Table, the memory slots of one zone.
//   - limiter.go: Limiter, Slot, Take, TakeWith and Release, the failure
//     policy, TakeMemory and ReleaseMemory.
//   - holder.go: the renewal loop, the release queue and its overflow.
package inflight
