package traefikplugin

import (
	"context"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// useStore makes s take m's decisions instead of the in-memory zone: the
// seam where a remote store (Redis) plugs in. New then chooses a path
// that goes through the store (see choosePath).
func useStore(m *Middleware, s ratelimit.Store) {
	m.store = s
	m.guard, _ = s.(*guard.Guard)
	if m.guard != nil {
		if rs, ok := m.guard.Remote().(*redisstore.Store); ok {
			m.keyCall = rs.KeyCall(m.zone, m.guard)
		}
	}
}

// takeFromStore decides the request through m.store, a guard.Guard
// that applies the onStoreError policy itself when Redis fails, so its
// error is always nil; should another store fail, the request is let
// through as the default policy would.
//
// A Guard, the Redis store's, is called through redisstore.TakeKey, not
// the interface (see Performance under yaegi). With leases on, lease.Take
// decides, through the guard when it has no lease to spend.
func takeFromStore(ctx context.Context, m *Middleware, key string) ratelimit.Decision {
	if m.lease != nil {
		return lease.Take(ctx, m.lease, key, 0, time.Now())
	}
	if m.guard != nil {
		return redisstore.TakeKey(ctx, m.guard, m.keyCall, m.zone, key, time.Now())
	}
	return takeFromStoreInterface(ctx, m, key)
}

// takeFromStoreInterface is takeFromStore through a store that is no
// Guard, called through the Store interface.
func takeFromStoreInterface(ctx context.Context, m *Middleware, key string) ratelimit.Decision {
	items := []ratelimit.Item{{Zone: m.zone, Key: key}}
	out := make([]ratelimit.Decision, 1)
	if _, err := m.store.Take(ctx, time.Now(), items, out); err != nil {
		r := m.zone.Rule()
		return ratelimit.Decision{Allowed: true, Limit: r.Limit, Remaining: r.Limit - r.Cost}
	}
	return out[0]
}
