package ratelimit

import (
	"sync"
	"time"
)

// denyCache remembers, per zone and key, until when the remote store
// denies: a request on that key before then is denied locally without
// asking the store. This is exact: a key's count only falls as time passes
// (other instances can only raise it), so a key denied until t stays denied
// until t.
type denyCache struct {
	max int

	mu    sync.Mutex
	n     int
	zones map[*Zone]map[string]cachedDenial
}

type cachedDenial struct {
	retry, reset time.Time
	remaining    int64
}

func newDenyCache(max int) *denyCache {
	return &denyCache{max: max, zones: make(map[*Zone]map[string]cachedDenial)}
}

// check fills out and returns true if some item of the request is denied
// until after now; the items not denied are reported unconsulted.
func (c *denyCache) check(now time.Time, items []Item, out []Decision) bool {
	c.mu.Lock()
	hit := -1
	var d cachedDenial
	for i := range items {
		keys := c.zones[items[i].Zone]
		if keys == nil {
			continue
		}
		e, ok := keys[items[i].Key]
		if !ok {
			continue
		}
		if !now.Before(e.retry) {
			delete(keys, items[i].Key)
			c.n--
			continue
		}
		hit, d = i, e
		break
	}
	c.mu.Unlock()
	if hit < 0 {
		return false
	}
	for i := range items {
		out[i] = unconsulted(items[i].Zone)
	}
	reset := d.reset.Sub(now)
	if reset < 0 {
		reset = 0
	}
	out[hit] = Decision{
		Limit:      items[hit].Zone.rule.Limit,
		Remaining:  d.remaining,
		RetryAfter: d.retry.Sub(now),
		ResetAfter: reset,
	}
	return true
}

// record remembers the denials among decisions taken at now.
func (c *denyCache) record(now time.Time, items []Item, out []Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range items {
		if out[i].Allowed || out[i].RetryAfter <= 0 {
			continue
		}
		z := items[i].Zone
		keys := c.zones[z]
		if keys == nil {
			keys = make(map[string]cachedDenial)
			c.zones[z] = keys
		}
		if _, ok := keys[items[i].Key]; !ok {
			if c.n >= c.max && !c.evict(now) {
				continue
			}
			c.n++
		}
		keys[items[i].Key] = cachedDenial{
			retry:     now.Add(out[i].RetryAfter),
			reset:     now.Add(out[i].ResetAfter),
			remaining: out[i].Remaining,
		}
	}
}

// evictScan bounds the entries looked at to make room.
const evictScan = 16

// evict removes the expired entries among a few (the map's order is
// random), or else the first of them, and reports whether it freed a place.
func (c *denyCache) evict(now time.Time) bool {
	var victimZone *Zone
	victimKey := ""
	seen, freed := 0, false
	for z, keys := range c.zones {
		for k, e := range keys {
			if !now.Before(e.retry) {
				delete(keys, k)
				c.n--
				freed = true
			} else if victimZone == nil {
				victimZone, victimKey = z, k
			}
			seen++
			if seen >= evictScan {
				break
			}
		}
		if seen >= evictScan {
			break
		}
	}
	if !freed && victimZone != nil {
		delete(c.zones[victimZone], victimKey)
		c.n--
		freed = true
	}
	return freed
}

// len returns the number of cached denials.
func (c *denyCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
