package traefikplugin

import (
	"strconv"
	"strings"
	"time"
)

// parseDuration reads a duration as Traefik does: a Go duration such as
// "1m30s", or a bare integer number of seconds. field names the setting in
// the error.
func parseDuration(field, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > int64(1<<63-1)/int64(time.Second) || n < -int64(1<<63-1)/int64(time.Second) {
			return 0, fieldError(field, strconv.Quote(s)+" seconds is out of range")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fieldError(field, strconv.Quote(s)+` is not a duration (want e.g. "1m", "10s" or a number of seconds)`)
	}
	return d, nil
}
