package guard

import (
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// checkDenials fills out and returns true if some item of the request is
// denied until after now; the items not denied are reported unconsulted.
// It is what Guard's take does, inline, before it asks the store.
func checkDenials(c *denyCache, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) bool {
	return atomic.LoadInt64(&c.n) != 0 && checkCached(c, now, items, out)
}
