// Package ratelimit is the limiter: rules, the sliding-window algorithms,
// decisions, and the in-memory store, where the decision is taken when no
// remote store keeps the counts.
//
// A Zone holds the counts of one rule, sharded and bounded in keys. A
// Store decides the items of one request together; Memory is the
// in-memory one, and other packages supply the remote store and the guard
// around it. Nothing here knows where else counts may be kept.
//
// The package is loaded by Traefik's yaegi interpreter as well as
// compiled into Caddy, so it uses the standard library only. Under yaegi
// every call allocates the callee's locals and temporaries, and a method
// call costs several function calls: the calls the Traefik plugin makes on
// every request (TakeAt, TakeLimitAt, TakeReservedAt, RefundAt, Serial)
// are plain functions taking the zone as their first argument, each with
// its common case written out in few statements. Compiled Go pays nothing
// for that form. Methods remain where an interface needs them (Store).
//
// # Files
//
//   - rule.go: Rule, the algorithms, and the bounds of a limit and a window.
//   - field.go: Field, FieldError and Spelling: errors that name a setting.
//   - decision.go: Decision, Receipt and LeaseUse, and Tightest.
//   - store.go: Item, the Store interface, Memory, and TakeAll.
//   - keycall.go: KeyCall, a remote store's call prepared for one zone.
//   - zone.go: Zone, its options and stats, its sweeper, and TakeAt.
//   - shard.go: a zone's shards: slots, eviction and sleep.
//   - buckets.go: the bucket algorithms (sliding, strict, fixed).
//   - log.go: the exact log algorithm.
//   - sketch.go: the summary of evicted keys.
//   - refund.go: Refunder, reservations (TakeReservedAt) and RefundAt.
//   - inspect.go: KeyState, Zone.Inspect and Zone.Forget, and Serial.
//   - override.go: per-key limits (Overrides) and ValidLimit.
//   - status.go: StatusSet, the response codes a zone counts.
//   - zoneid.go: ZoneID, what makes two zones the same across reloads.
//   - snapshot.go: Zone.Snapshot and Zone.Restore: a zone's keys across a
//     restart.
//   - snapshotfile.go: the snapshot format, its reader and its bound.
//   - snapshotstream.go: a snapshot encoded from each shard's copy.
//   - persist.go: what a zone with Options.Persist keeps for snapshots.
package ratelimit
