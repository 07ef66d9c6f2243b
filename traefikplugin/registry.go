package traefikplugin

import (
	"strconv"
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

// registered is a zone and the rule it was made for.
type registered struct {
	fingerprint string
	zone        *ratelimit.Zone
}

// zoneFor returns the zone of the middleware name for rule and maxKeys,
// reusing the registered one when they match.
func zoneFor(name string, rule ratelimit.Rule, maxKeys int) (*ratelimit.Zone, error) {
	fp := fingerprint(rule, maxKeys)
	registryMu.Lock()
	defer registryMu.Unlock()
	if r := registry[name]; r != nil {
		if r.fingerprint == fp {
			return r.zone, nil
		}
		// Handlers of the previous configuration may still be serving:
		// a closed zone keeps answering, it only stops sweeping.
		r.zone.Close()
		delete(registry, name)
	}
	z, err := ratelimit.NewZone(name, rule, ratelimit.Options{MaxKeys: maxKeys, Evicting: fullZoneLog(name, maxKeys)})
	if err != nil {
		return nil, err
	}
	registry[name] = &registered{fingerprint: fp, zone: z}
	return z, nil
}

// fingerprint identifies what a zone's state depends on.
func fingerprint(rule ratelimit.Rule, maxKeys int) string {
	return rule.Algorithm.String() +
		" w=" + strconv.FormatInt(int64(rule.Window), 10) +
		" t=" + strconv.FormatInt(int64(rule.SubWindow), 10) +
		" n=" + strconv.FormatInt(rule.Limit, 10) +
		" c=" + strconv.FormatInt(rule.Cost, 10) +
		" k=" + strconv.Itoa(maxKeys)
}

// registeredZones returns how many zones the registry holds (tests).
func registeredZones() int {
	registryMu.Lock()
	defer registryMu.Unlock()
	return len(registry)
}
