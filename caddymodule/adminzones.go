package caddymodule

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// handlers holds the provisioned handlers of the loaded configs, for the
// admin API: a zone's state is in the zone pool, but which Redis store
// counts it, and how its keys are grouped, only its handlers know.
var handlers = struct {
	sync.Mutex
	set map[*Handler]struct{}
}{set: make(map[*Handler]struct{})}

// trackHandler makes a provisioned handler's zones visible to the admin
// API.
func trackHandler(h *Handler) {
	handlers.Lock()
	handlers.set[h] = struct{}{}
	handlers.Unlock()
}

// untrackHandler hides the zones of a handler being cleaned up.
func untrackHandler(h *Handler) {
	handlers.Lock()
	delete(handlers.set, h)
	handlers.Unlock()
}

// zoneUse is one zone state as the admin API shows it: the in-memory
// state shared by every handler that has a zone of this name and these
// settings, and where those handlers count it.
type zoneUse struct {
	name          string
	zone          *ratelimit.Zone
	maxKeys       int
	sweepInterval time.Duration
	// memory is set when a handler counts the zone in memory: without
	// Redis, or with Redis and on_store_error local, while Redis fails.
	memory bool
	// redis are the Redis stores that count it, each with its guard.
	redis []redisUse
	// groupings are the distinct ways its handlers group addresses in
	// keys (ipv4_prefix, ipv6_prefix).
	groupings []keySource
	// templates are its handlers' distinct key templates.
	templates []string
}

// redisUse is a Redis store that counts a zone, with the guard in front
// of it, whose denial cache holds the zone's keys too.
type redisUse struct {
	store *ratelimit.RedisStore
	guard *ratelimit.Guard
}

// zoneUses returns the zone states of the tracked handlers named name,
// or all of them for "", ordered by name then id.
func zoneUses(name string) []*zoneUse {
	handlers.Lock()
	defer handlers.Unlock()
	byZone := make(map[*ratelimit.Zone]*zoneUse)
	var out []*zoneUse
	for h := range handlers.set {
		store, isRedis := ratelimit.RedisOf(h.store)
		guard, _ := h.store.(*ratelimit.Guard)
		for _, z := range h.zones {
			if name != "" && z.name != name {
				continue
			}
			u := byZone[z.zone]
			if u == nil {
				u = &zoneUse{name: z.name, zone: z.zone, maxKeys: h.MaxKeys, sweepInterval: time.Duration(h.SweepInterval)}
				byZone[z.zone] = u
				out = append(out, u)
			}
			u.memory = u.memory || !isRedis || h.OnStoreError == "local"
			if isRedis && !slices.ContainsFunc(u.redis, func(r redisUse) bool { return r.store == store }) {
				u.redis = append(u.redis, redisUse{store: store, guard: guard})
			}
			if !slices.ContainsFunc(u.groupings, func(k keySource) bool { return k.v4 == z.key.v4 && k.v6 == z.key.v6 }) {
				u.groupings = append(u.groupings, z.key)
			}
			if !slices.Contains(u.templates, z.key.template) {
				u.templates = append(u.templates, z.key.template)
			}
		}
	}
	slices.SortFunc(out, func(a, b *zoneUse) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.zone.ID(), b.zone.ID()))
	})
	return out
}

// lookupKeys returns the keys under which the zone may hold key: key as
// each of its handlers' groupings makes it, so that a plain IP address
// finds its /64 (or configured prefix). Grouping a key the zone made
// leaves it as it is.
func (u *zoneUse) lookupKeys(key string) []string {
	var keys []string
	for _, g := range u.groupings {
		if k := g.mask(key); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}
