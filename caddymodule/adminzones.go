package caddymodule

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
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
	// states are its handlers' zones, whose overrides and limit
	// placeholders give keys their limits.
	states []*zoneState
	// keysAreClientIP is set when every handler keys the zone on the
	// client IP; mayFallBack when some handler's key may come out empty
	// and fall back to it.
	keysAreClientIP bool
	mayFallBack     bool
}

// redisUse is a Redis store that counts a zone, with the guard in front
// of it, whose denial cache holds the zone's keys too.
type redisUse struct {
	store *redisstore.Store
	guard *guard.Guard
	// leases are the lease tables of the zone's handlers on this store.
	leases []*lease.Table
}

// zoneUses returns the zone states of the tracked handlers named name,
// or all of them for "", ordered by name then id.
func zoneUses(name string) []*zoneUse {
	handlers.Lock()
	defer handlers.Unlock()
	byZone := make(map[*ratelimit.Zone]*zoneUse)
	var out []*zoneUse
	for h := range handlers.set {
		store, isRedis := redisOf(h.store)
		g, _ := h.store.(*guard.Guard)
		for _, z := range h.zones {
			if name != "" && z.name != name || z.zone == nil {
				continue // another zone, or in_flight alone: no counts
			}
			u := byZone[z.zone]
			if u == nil {
				u = &zoneUse{name: z.name, zone: z.zone, maxKeys: h.MaxKeys, sweepInterval: time.Duration(h.SweepInterval), keysAreClientIP: true}
				byZone[z.zone] = u
				out = append(out, u)
			}
			u.states = append(u.states, z)
			u.keysAreClientIP = u.keysAreClientIP && z.key.clientIP
			u.mayFallBack = u.mayFallBack || z.key.mayFallBack()
			u.memory = u.memory || !isRedis || h.OnStoreError == "local"
			if isRedis {
				i := slices.IndexFunc(u.redis, func(r redisUse) bool { return r.store == store })
				if i < 0 {
					i = len(u.redis)
					u.redis = append(u.redis, redisUse{store: store, guard: g})
				}
				if z.lease != nil {
					u.redis[i].leases = append(u.redis[i].leases, z.lease)
				}
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
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(ratelimit.ZoneNumber(a.zone), ratelimit.ZoneNumber(b.zone)))
	})
	return out
}

// redisOf returns the Redis store behind store, the store itself or the
// one its guard is in front of, and whether there is one.
func redisOf(store ratelimit.Store) (*redisstore.Store, bool) {
	if g, ok := store.(*guard.Guard); ok {
		store = g.Remote()
	}
	r, ok := store.(*redisstore.Store)
	return r, ok
}
