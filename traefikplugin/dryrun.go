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
// second per middleware.
func logDryRun(m *Middleware, key string) {
	now := time.Now().Unix()
	last := atomic.LoadInt64(&m.lastDryRunLog)
	if now == last || !atomic.CompareAndSwapInt64(&m.lastDryRunLog, last, now) {
		return
	}
	io.WriteString(dryRunLog, "windowlimit: dry run: middleware "+strconv.Quote(m.name)+
		" would reject key "+strconv.Quote(key)+"\n")
}
