package traefikplugin

import (
	"io"
	"strconv"
	"sync/atomic"
)

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
