package traefikplugin

import (
	"io"
	"strconv"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

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
