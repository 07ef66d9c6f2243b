package traefikplugin

import (
	"fmt"
	"io"
	"log"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// The two writers that reach Traefik's log. Traefik gives the interpreter
// its logger as standard output (logged at DEBUG) and standard error
// (logged at ERROR), in Traefik's format (common or JSON) and to its
// log.filePath. yaegi hands that logger to the plugin's os.Stdout and
// os.Stderr only when it is an *os.File, which Traefik's is not: those
// write to the process's own streams, raw, whatever the log settings. What
// does reach the logger is yaegi's fmt.Print (standard output) and its
// log package (standard error). Compiled, both are the process's streams.
var (
	// debugLog receives the lines of Traefik's DEBUG level.
	debugLog io.Writer = printer{}
	// errorLog receives the lines of Traefik's ERROR level: yaegi's log
	// package writes to the interpreter's standard error, and log.Writer
	// returns that stream itself, without the package's timestamp prefix
	// (Traefik adds its own).
	errorLog = log.Writer()
)

// printer writes to the interpreter's standard output through fmt.Print.
// fmt.Print, Printf and Println are the only functions of the standard
// library that yaegi points at that stream. Traefik's logger makes each
// call one log entry, so each line must be written in one call. The lines
// it carries are rate-limited (at most one a second per middleware), so
// fmt costs the request path nothing.
type printer struct{}

func (printer) Write(p []byte) (int, error) {
	return fmt.Print(string(p))
}

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

// rejectLog receives the lines about rejections: Traefik's DEBUG level.
// Traefik gives a plugin no INFO level (see debugLog), and a rejection is
// no error.
var rejectLog = debugLog

// logRejection notes a rejection, at most once a second per middleware,
// so that a flood of 429s does not become a flood of log lines; each line
// counts the rejections it stands for. On the common rejection it costs
// one call, a clock read and two atomic operations; the line is built at
// most once a second. It names the key only with logKey: keys may be API
// keys or personal data, and logs travel further than counters.
func logRejection(m *Middleware, key string) {
	if !firstThisSecond(&m.lastRejectLog) {
		atomic.AddInt64(&m.rejectsSuppressed, 1)
		return
	}
	writeRejection(m, key)
}

// writeRejection writes logRejection's line, apart so that the common
// rejection's frame holds none of its temporaries (see Performance under
// yaegi).
func writeRejection(m *Middleware, key string) {
	io.WriteString(rejectLog, rejectionLine(m, key, atomic.SwapInt64(&m.rejectsSuppressed, 0)))
}

// rejectionLine describes a rejection and the suppressed ones before it,
// and how full the middleware's in-memory zone is.
func rejectionLine(m *Middleware, key string, suppressed int64) string {
	what := "a request"
	if m.logKey {
		what = "key " + strconv.Quote(key)
	}
	line := "windowlimit: info: middleware " + strconv.Quote(m.name) + " rejected " + what +
		"; " + strconv.FormatInt(suppressed, 10) + " more rejections since the last line"
	if m.store == nil {
		// With Redis, memory holds only onStoreError local's counts.
		st := m.zone.Stats()
		line += "; zone holds " + strconv.Itoa(st.Keys) + " keys, evicted " +
			strconv.FormatUint(st.Evictions, 10) + " that still counted"
	}
	if m.zone.Ban() > 0 {
		// The plugin's equivalent of Caddy's bans_total: the bans this
		// instance started, in memory or through Redis.
		line += "; " + strconv.FormatUint(m.zone.Bans(), 10) + " keys banned since the start"
	}
	return line + "\n"
}

// fullLog receives the warnings that a zone is full: Traefik's ERROR
// level (see errorLog).
var fullLog = errorLog

// fullZoneLog returns the Evicting callback of the zone of the middleware
// name: a line saying that the zone evicted keys that still counted, since
// the last line and in all (the zone calls it at most once a minute, from
// its sweeper only).
func fullZoneLog(name string, maxKeys int) func(uint64) {
	if maxKeys == 0 {
		maxKeys = ratelimit.DefaultMaxKeys
	}
	var total uint64
	return func(n uint64) {
		total += n
		io.WriteString(fullLog, "windowlimit: warning: middleware "+strconv.Quote(name)+": zone full (maxKeys "+
			strconv.Itoa(maxKeys)+"): evicted "+strconv.FormatUint(n, 10)+
			" keys that still counted ("+strconv.FormatUint(total, 10)+" in all; they come back with an over-estimate); raise maxKeys if this is your normal traffic, otherwise a flood of fresh keys is on\n")
	}
}
