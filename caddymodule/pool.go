package caddymodule

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// zones holds the in-memory state of every zone in the loaded configs. A
// reload provisions the new config before it cleans up the old one, so a
// zone present in both is only ever shared, never rebuilt: its counts
// survive. The pool key is the zone's ratelimit.ZoneID, so a changed zone
// starts afresh instead of being read with another rule.
var zones = caddy.NewUsagePool()

// pooledZone lets the pool close a zone when its last user goes.
type pooledZone struct {
	*ratelimit.Zone
	// saver, when the zone is persisted, saves it (persist.go).
	saver *zoneSaver
}

// Destruct stops the zone's sweeper, and saves a persisted zone a last
// time: its last user went (a graceful stop, a reload that drops it).
func (p pooledZone) Destruct() error {
	if p.saver != nil {
		p.saver.release()
	}
	p.Close()
	return nil
}

// acquireZone returns the zone of this name and settings, creating it if no
// loaded config has it, and its pool key for releaseZone.
// gen is the config load asking (see zoneSaver.gen).
func acquireZone(name string, rule ratelimit.Rule, opts ratelimit.Options, persist *persistPlan, gen any) (string, *ratelimit.Zone, error) {
	key := ratelimit.ZoneID(name, rule, opts) + persist.poolSuffix()
	v, _, err := zones.LoadOrNew(key, func() (caddy.Destructor, error) {
		logger := caddy.Log().Named("http.handlers.rate_limit")
		opts.Evicting = fullZoneLog(logger, name, opts.MaxKeys)
		p, err := newPersistedZone(name, rule, opts, persist, gen, logger)
		if err != nil {
			return nil, spelling.Error(err)
		}
		return p, nil
	})
	if err != nil {
		return "", nil, err
	}
	return key, v.(pooledZone).Zone, nil
}

// releaseZone drops one use of the zone under key.
func releaseZone(key string) error {
	if _, err := zones.Delete(key); err != nil {
		return fmt.Errorf("releasing zone state %s: %w", key, err)
	}
	return nil
}

// liveZones calls f with every zone in use.
func liveZones(f func(*ratelimit.Zone)) {
	zones.Range(func(_, v any) bool {
		f(v.(pooledZone).Zone)
		return true
	})
}
