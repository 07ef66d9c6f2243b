package traefikplugin

import (
	"io"
	"os"
	"strconv"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// fullLog receives the warnings that a zone is full. Traefik logs a
// plugin's standard error at error level.
var fullLog io.Writer = os.Stderr

// fullEvery is the least time between two warnings about one zone.
const fullEvery = time.Minute

// fullZoneLog returns the Evicting callback of the zone of the middleware
// name: a line, at most once every fullEvery, saying that the zone evicted
// keys that still counted, with how many since the last line. The zone's
// sweeper is its only caller, so it needs no lock.
func fullZoneLog(name string, maxKeys int) func(uint64) {
	if maxKeys == 0 {
		maxKeys = ratelimit.DefaultMaxKeys
	}
	var last time.Time
	var pending uint64
	return func(n uint64) {
		pending += n
		if time.Since(last) < fullEvery {
			return
		}
		last = time.Now()
		io.WriteString(fullLog, "windowlimit: middleware "+strconv.Quote(name)+": zone full (maxKeys "+
			strconv.Itoa(maxKeys)+"): evicted "+strconv.FormatUint(pending, 10)+
			" keys that still counted (they come back with an over-estimate); raise maxKeys if this is your normal traffic, otherwise a flood of fresh keys is on\n")
		pending = 0
	}
}
