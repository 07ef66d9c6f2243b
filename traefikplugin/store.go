package traefikplugin

import (
	"context"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// useStore makes s take m's decisions instead of the in-memory zone: the
// seam where a remote store (Redis) plugs in. ServeHTTP's inline path, the
// in-memory zone's TakeAt, no longer applies.
func useStore(m *Middleware, s ratelimit.Store) {
	m.store = s
	m.slow = true
}

// takeFromStore decides the request through m.store.
//
// TODO(redis issue): apply the configured failure policy; until then a
// store error lets the request through, as fail-open does.
func takeFromStore(ctx context.Context, m *Middleware, key string) ratelimit.Decision {
	items := []ratelimit.Item{{Zone: m.zone, Key: key}}
	out := make([]ratelimit.Decision, 1)
	if _, err := m.store.Take(ctx, time.Now(), items, out); err != nil {
		return ratelimit.Decision{Allowed: true, Limit: m.zone.Rule().Limit, Remaining: m.zone.Rule().Limit}
	}
	return out[0]
}
