// Package persist keeps in-memory zones' counts in files across restarts:
// a zone's snapshot written atomically to its file, and read back into the
// zone of the next process.
//
// The snapshot itself, its format and what a restore may and may not do
// are the ratelimit package's (Zone.Snapshot, Zone.Restore). This package
// names the files and writes them so that a crash never leaves a partial
// one: a temporary file, synced, renamed over the previous snapshot.
//
// # Files
//
//   - file.go: FileName, Save and Load.
package persist
