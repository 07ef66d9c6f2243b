package traefikplugin

import (
	"io"
	"strconv"
	"sync/atomic"
	"time"
)

// dryRunLog receives the dry-run lines: Traefik's DEBUG level (see
// debugLog).
var dryRunLog = debugLog

// logDryRun notes a request that dry-run mode let through, at most once a
// second per middleware. The line names the key only with logKey: keys may
// be API keys or personal data, and logs travel further than counters.
func logDryRun(m *Middleware, key string) {
	if !firstThisSecond(&m.lastDryRunLog) {
		return
	}
	what := "a request"
	if m.logKey {
		what = "key " + strconv.Quote(key)
	}
	io.WriteString(dryRunLog, "windowlimit: info: dry run: middleware "+strconv.Quote(m.name)+" would reject "+what+"\n")
}

// firstThisSecond reports whether the caller is the first to pass this
// second. last holds the Unix second of the last pass, which it moves on:
// at most one log line a second, without a lock.
func firstThisSecond(last *int64) bool {
	now := time.Now().Unix()
	old := atomic.LoadInt64(last)
	return now != old && atomic.CompareAndSwapInt64(last, old, now)
}
