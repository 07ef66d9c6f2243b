package traefikplugin

import (
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// dryRunLog receives the dry-run lines. Traefik logs a plugin's standard
// output at debug level.
var dryRunLog io.Writer = os.Stdout

// logDryRun notes a request that dry-run mode let through, at most once a
// second per middleware. The line names the key only with logKey: keys may
// be API keys or personal data, and logs travel further than counters.
func logDryRun(m *Middleware, key string) {
	now := time.Now().Unix()
	last := atomic.LoadInt64(&m.lastDryRunLog)
	if now == last || !atomic.CompareAndSwapInt64(&m.lastDryRunLog, last, now) {
		return
	}
	what := "a request"
	if m.logKey {
		what = "key " + strconv.Quote(key)
	}
	io.WriteString(dryRunLog, "windowlimit: dry run: middleware "+strconv.Quote(m.name)+" would reject "+what+"\n")
}
