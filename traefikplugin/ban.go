package traefikplugin

import (
	"strconv"
	"time"
)

// A middleware with a ban decides in memory with ratelimit.TakeBanAt, on
// serveAny's path (the inline memory path is TakeAt's alone, and costs a
// middleware without a ban nothing more), or through ratelimit.Memory
// with countStatus or overrides; in Redis, through the script's general
// path, without leases.

// banSetting returns the ban of c, 0 for none, or an error naming ban:
// a duration that is not positive, or a ban on a middleware without a
// window and a limit, whose keys never reach a limit. ratelimit.NewZone
// refuses one longer than a year, also naming ban.
func (c *Config) banSetting() (time.Duration, error) {
	if c.Ban == "" {
		return 0, nil
	}
	if c.Window == "" || c.Limit <= 0 {
		return 0, fieldError("ban", "needs a window and a limit: a key is banned when it reaches its limit")
	}
	d, err := parseDuration("ban", c.Ban)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fieldError("ban", "must be positive, got "+strconv.Quote(c.Ban))
	}
	return d, nil
}
