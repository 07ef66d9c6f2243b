// Package ratelimit is the limiter: rules, the sliding-window algorithms,
// decisions, and the in-memory store, where the decision is taken when no
// remote store keeps the counts.
//
// A Zone holds the counts of one rule, sharded and bounded in keys. A
// Store decides the items of one request together; Memory is the
// in-memory one, and other packages supply the remote store and the guard
// around it. Nothing here knows where else counts may be kept.
//
// Every time a function or method takes is a time.Time; a zone keeps
// times as Unix nanoseconds.
//
// # Under yaegi
//
// The package is loaded by Traefik's yaegi interpreter (v0.16) as well as
// compiled into Caddy, so it uses the standard library only, and the code
// the Traefik plugin runs on every request is shaped by what the
// interpreter charges; compiled Go pays nothing for that shape:
//
//   - A call allocates a slot for every local and temporary of the callee,
//     taken branches or not. So the common case of TakeAt, TakeLimitAt,
//     TakeBanAt, TakeReservedAt and RefundAt is written out in few
//     statements, the rest is in functions of their own (takeRest,
//     takeReserved, refund), and small helpers are written out where they
//     are used (settle's newest count, the denial check in takeRest).
//   - A method call on an interpreted type costs 14 to 28 allocations more
//     than a function call (scripts/yaegitest: BenchmarkPluginConfigs and
//     BenchmarkRedisLayersInterpreted, tried as methods). So the calls a
//     request makes (TakeAt, TakeLimitAt, TakeBanAt, TakeReservedAt,
//     RefundAt, ZoneNumber) are functions taking the zone first; every other
//     call on a zone is a method. A shard embeds its mutex, which saves
//     TakeAt a selector.
//   - A time.Time passed to TakeAt costs 2 allocations a request more than
//     the int64 it carries; the API takes time.Time all the same, as the
//     Store interface and the other packages do.
//   - A type assertion runs as compiled Go does, so a host checks a
//     *FieldError with one.
//   - Workarounds for the interpreter's bugs, which the yaegi harness
//     catches: persistState.dropRestored and the snapshot reader assign
//     one field at a time (a, b = x, y goes wrong for indexed operands,
//     and nil, nil, nil to typed fields panics).
//
// # Files
//
//   - rule.go: Rule, the algorithms, and the bounds of a limit and a window.
//   - field.go: Field, FieldError and Spelling: errors that name a setting.
//   - decision.go: Decision, Receipt and LeaseUse, and Tightest.
//   - store.go: Item, the Store interface, Memory, and TakeAll.
//   - zone.go: Zone, its options and stats, its sweeper, and TakeAt.
//   - shard.go: a zone's shards: slots, eviction and sleep.
//   - buckets.go: the bucket algorithms (sliding, strict, fixed).
//   - log.go: the exact log algorithm.
//   - sketch.go: the summary of evicted keys.
//   - refund.go: Refunder, reservations (TakeReservedAt) and RefundAt.
//   - inspect.go: KeyState, Zone.Inspect and Zone.Forget, and ZoneNumber.
//   - override.go: per-key limits (Overrides) and ValidLimit.
//   - zoneid.go: ZoneID, what makes two zones the same across reloads.
//   - snapshot.go: Zone.Snapshot and Zone.Restore: a zone's keys across a
//     restart.
//   - snapshotfile.go: the snapshot format, its reader and its bound.
//   - snapshotstream.go: a snapshot encoded from each shard's copy.
//   - persist.go: what a zone with Options.Persist keeps for snapshots.
package ratelimit
