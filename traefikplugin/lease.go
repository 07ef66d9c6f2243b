package traefikplugin

import (
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// The lease tables live here, one per middleware name with a redis block
// and lease auto, guarded by redisMu: Traefik calls New once per router
// using a middleware and again on every reload, and every handler of one
// name and rule shares one table, so that a hot key's demand is counted
// once and its lease spent by all of them. A table holds no goroutine,
// and a timer only while one of its leases is live (it gives back what
// the lease left when it expires), so a table that no handler uses any
// more is garbage once its leases have expired.
var leaseOf = make(map[string]*leased)

// leased is the lease table of a name, with the zone and guard it was
// made for.
type leased struct {
	zone  *ratelimit.Zone
	guard *guard.Guard
	table *lease.Table
}

// leaseTableFor returns the lease table of the middleware name, or nil.
// The table is over zone z and guard g, with z's call kc; the name's
// table is reused when z and g are those it was made for. With on false
// or g nil there is none, and every request is decided per request. A
// table it replaces (a changed rule, redis block
// or lease setting) is closed, giving back what its leases left, in a
// goroutine of its own (New never blocks); the handlers of the previous
// configuration that still serve then decide per request.
func leaseTableFor(name string, z *ratelimit.Zone, g *guard.Guard, kc *redisstore.KeyCall, on bool) *lease.Table {
	redisMu.Lock()
	defer redisMu.Unlock()
	l := leaseOf[name]
	if on && g != nil && l != nil && l.zone == z && l.guard == g {
		return l.table
	}
	dropLeases(name)
	if !on || g == nil {
		return nil
	}
	t, err := lease.NewTable(z, g, lease.Options{KeyCall: kc})
	if err != nil {
		return nil // z and g are set: never
	}
	leaseOf[name] = &leased{zone: z, guard: g, table: t}
	return t
}

// dropLeases closes the lease table of name, if any, and forgets it.
// redisMu must be held.
func dropLeases(name string) {
	if l := leaseOf[name]; l != nil {
		delete(leaseOf, name)
		go l.table.Close()
	}
}

// forgetLeases forgets the lease table of name, whose zone went to sleep,
// without closing it: a handler of name may still serve with it (a zone
// over Redis holds no key, so it sleeps while its handlers serve), and
// keep leasing. Once no handler uses it, its timers end with its last
// leases, giving back what they left, and it is garbage; a later New of
// name makes a new table. redisMu must be held.
func forgetLeases(name string) {
	delete(leaseOf, name)
}
