// Package persist keeps in-memory zones' counts in files across restarts:
// a zone's snapshot written atomically to its file, and read back into the
// zone of the next process.
//
// The snapshot itself, its format and what a restore may and may not do
// are the ratelimit package's (Zone.Snapshot, Zone.Restore). This package
// names the files and writes them so that a crash never leaves a partial
// one: a temporary file, synced, renamed over the previous snapshot.
// It trusts a file only as far as its directory: a snapshot, its lock and
// its directory that another user owns (where FileOwner tells) or that
// group or others may write are refused, and one process at a time holds
// a snapshot (Claim).
//
// It imports no syscall: yaegi, which interprets it in Traefik, has none.
// So it cannot read a file's owner, which a host that can sets FileOwner
// for, nor lock a file, for which a lease in the lock file stands.
//
// A Saver is what both hosts start for a persisted zone: it restores the
// zone from the live zone it replaces (a reload) or from its file, saves
// it every interval while it holds the file, and a last time when the
// host releases the zone for good. It reports what happens as Events,
// which each host words in its own log (Caddy's zap logger, Traefik's
// lines) and counts.
//
// # Files
//
//   - file.go: FileName, Save and Load, and the checks of a file and its
//     directory before either (regular, not a link, its owner, its mode,
//     its size).
//   - claim.go: Claim, Renew and Release, one process at a time on a
//     snapshot, through a lease in its lock file.
//   - saver.go: Saver (Start, Resume, Save, Close), its Options and its
//     Events: the restore, the ticker, the claim retried, the failures
//     logged at most once a minute.
package persist
