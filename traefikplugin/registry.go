package traefikplugin

import (
	"sync"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Traefik calls New on every reload of the dynamic configuration and never
// tells the instances it replaces to stop. The zones therefore live here,
// one per middleware name: a reload with the same rule gets the same zone
// back, with its counts, and a reload that changes the rule closes the old
// zone (stopping its sweeper) so reloads never pile up goroutines.
var (
	registryMu sync.Mutex
	registry   = make(map[string]*registered)
)

// registered is a zone and the ratelimit.ZoneID it was made for.
type registered struct {
	id   string
	zone *ratelimit.Zone
}

// zoneFor returns the zone of the middleware name for rule and maxKeys,
// reusing the registered one when they match.
func zoneFor(name string, rule ratelimit.Rule, maxKeys int) (*ratelimit.Zone, error) {
	opts := ratelimit.Options{MaxKeys: maxKeys}
	id := ratelimit.ZoneID(name, rule, opts)
	registryMu.Lock()
	defer registryMu.Unlock()
	if r := registry[name]; r != nil {
		if r.id == id {
			return r.zone, nil
		}
		// Handlers of the previous configuration may still be serving:
		// a closed zone keeps answering, it only stops sweeping.
		r.zone.Close()
		delete(registry, name)
	}
	opts.Evicting = fullZoneLog(name, maxKeys)
	z, err := ratelimit.NewZone(name, rule, opts)
	if err != nil {
		return nil, err
	}
	registry[name] = &registered{id: id, zone: z}
	return z, nil
}

// registeredZones returns how many zones the registry holds (tests).
func registeredZones() int {
	registryMu.Lock()
	defer registryMu.Unlock()
	return len(registry)
}
