package guard

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// denyCache remembers, per zone and key, until when the remote store
// denies: a request on that key before then is denied locally without
// asking the store. This is exact: a key's count only falls as time passes
// (other instances can only raise it), so a key denied until t stays denied
// until t.
//
// Zones are told apart by name and rule, what the remote store sees, not
// by pointer: a zone replaced by a reload is not kept alive, and one with
// the same name and rule keeps the denials, which still hold. The entries
// are bounded in number; a denial is kept under the limit it was decided
// with (see itemRule), so it never answers for the key under another.
// They are bounded in number; each stops counting at its retry time and is
// removed when next looked at, or evicted to make room.
type denyCache struct {
	max int

	// n is the number of entries, written under mu and read atomically,
	// so that an empty cache is seen in one load.
	n int64
	// signals is the guard's word (see Signals), which n is added to.
	signals *int64

	mu    sync.Mutex
	zones map[zoneRule]map[string]cachedDenial
}

type cachedDenial struct {
	retry, reset time.Time
	remaining    int64
	// until is when the entry stops answering: retry, or sooner for a
	// ban's denial (see banRecheck).
	until time.Time
}

// banRecheck is the longest a denial of a zone with a ban is answered
// locally: a ban lasts as long as the operator set, an hour say, and a
// reset through another instance (the admin API's DELETE) lifts it on
// every instance within this, not at the ban's end. A banned client then
// costs one store call a second per instance.
const banRecheck = time.Second

func newDenyCache(max int, signals *int64) *denyCache {
	return &denyCache{max: max, signals: signals, zones: make(map[zoneRule]map[string]cachedDenial)}
}

// checkCached fills out and returns true if some item of the request is
// denied until after now; the items not denied are reported unconsulted.
// Guard calls it only when the cache held denials a moment ago (an atomic
// load first), so that an empty cache, the common case of admitted
// traffic, costs no call (see the package documentation).
func checkCached(c *denyCache, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) bool {
	c.mu.Lock()
	hit := -1
	var d cachedDenial
	for i := range items {
		zr := itemRule(&items[i])
		keys := c.zones[zr]
		if keys == nil {
			continue
		}
		e, ok := keys[items[i].Key]
		if !ok {
			continue
		}
		if !now.Before(e.until) {
			c.remove(zr, keys, items[i].Key)
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
		out[i] = unconsulted(&items[i])
	}
	reset := d.reset.Sub(now)
	if reset < 0 {
		reset = 0
	}
	out[hit] = ratelimit.Decision{
		Limit:      ratelimit.LimitOf(&items[hit]),
		Remaining:  d.remaining,
		RetryAfter: d.retry.Sub(now),
		ResetAfter: reset,
	}
	return true
}

// record remembers the denials among decisions taken at now.
func (c *denyCache) record(now time.Time, items []ratelimit.Item, out []ratelimit.Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range items {
		if out[i].Allowed || out[i].RetryAfter <= 0 {
			continue
		}
		zr := itemRule(&items[i])
		keys := c.zones[zr]
		if _, ok := keys[items[i].Key]; !ok {
			if c.n >= int64(c.max) && !c.evict(now) {
				continue
			}
			atomic.AddInt64(&c.n, 1)
			atomic.AddInt64(c.signals, 1)
		}
		if keys = c.zones[zr]; keys == nil { // evict may have removed it
			keys = make(map[string]cachedDenial)
			c.zones[zr] = keys
		}
		e := cachedDenial{
			retry:     now.Add(out[i].RetryAfter),
			reset:     now.Add(out[i].ResetAfter),
			remaining: out[i].Remaining,
		}
		e.until = e.retry
		if items[i].Zone.Ban() > 0 && out[i].RetryAfter > banRecheck {
			e.until = now.Add(banRecheck)
		}
		keys[items[i].Key] = e
	}
}

// forget drops the denial cached for it, if any: its count fell.
func (c *denyCache) forget(it *ratelimit.Item) {
	c.mu.Lock()
	defer c.mu.Unlock()
	zr := itemRule(it)
	if keys := c.zones[zr]; keys != nil {
		if _, ok := keys[it.Key]; ok {
			c.remove(zr, keys, it.Key)
		}
	}
}

// itemRule is the zone and rule an item is decided under: its zone's,
// with the item's own limit.
func itemRule(it *ratelimit.Item) zoneRule {
	zr := zoneRule{it.Zone.Name(), it.Zone.Rule()}
	zr.rule.Limit = ratelimit.LimitOf(it)
	return zr
}

// evictScan bounds the entries looked at to make room.
const evictScan = 16

// evict removes the expired entries among a few (the map's order is
// random), or else the first of them, and reports whether it freed a place.
func (c *denyCache) evict(now time.Time) bool {
	var victimZone zoneRule
	var victimKeys map[string]cachedDenial
	victimKey := ""
	seen, freed := 0, false
	for zr, keys := range c.zones {
		for k, e := range keys {
			if !now.Before(e.until) {
				c.remove(zr, keys, k)
				freed = true
			} else if victimKeys == nil {
				victimZone, victimKeys, victimKey = zr, keys, k
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
	if !freed && victimKeys != nil {
		c.remove(victimZone, victimKeys, victimKey)
		freed = true
	}
	return freed
}

// remove deletes key from the entries keys of zr, and the zone's map when
// it holds no more.
func (c *denyCache) remove(zr zoneRule, keys map[string]cachedDenial, key string) {
	delete(keys, key)
	atomic.AddInt64(&c.n, -1)
	atomic.AddInt64(c.signals, -1)
	if len(keys) == 0 {
		delete(c.zones, zr)
	}
}

// len returns the number of cached denials.
func (c *denyCache) len() int {
	return int(atomic.LoadInt64(&c.n))
}

// ForgetDenial drops the guard's cached denials of key in z, under every
// limit (the rule's, an override's or a tier's: see itemRule), so that the
// key's next request asks the remote store again.
func (g *Guard) ForgetDenial(z *ratelimit.Zone, key string) {
	if g.denials == nil {
		return
	}
	c := g.denials
	c.mu.Lock()
	defer c.mu.Unlock()
	for zr, keys := range c.zones {
		r := zr.rule
		r.Limit = z.Rule().Limit
		if zr.name != z.Name() || r != z.Rule() {
			continue
		}
		if _, ok := keys[key]; ok {
			c.remove(zr, keys, key)
		}
	}
}

// zoneRule is what a zone is to a remote store: the name in its keys and
// the rule its counts obey. Zones replaced by a reload with the same name
// and rule share it, and their denials.
type zoneRule struct {
	name string
	rule ratelimit.Rule
}

// unconsulted is the decision reported for an item that was not asked
// because another item of the request already denied it: allowed, as far
// as this item knows, with its remaining count unknown and reported as 0.
// Tightest never picks it over the denial.
func unconsulted(it *ratelimit.Item) ratelimit.Decision {
	return ratelimit.Decision{Allowed: true, Limit: ratelimit.LimitOf(it)}
}

// denialsIn returns the number of denials c holds; 0 for no cache.
func denialsIn(c *denyCache) int {
	if c == nil {
		return 0
	}
	return c.len()
}
