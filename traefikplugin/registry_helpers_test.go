package traefikplugin

import "net/http"

// redisClients returns how many redis clients are open (tests).
func redisClients() int {
	redisMu.Lock()
	defer redisMu.Unlock()
	return len(redisByID)
}

// registeredZones returns how many zones the registry holds (tests).
func registeredZones() int {
	registryMu.Lock()
	defer registryMu.Unlock()
	return len(registry)
}

// registeredZone reports whether the registry holds a zone for name
// (tests).
func registeredZone(name string) bool {
	registryMu.Lock()
	defer registryMu.Unlock()
	return registry[name] != nil
}

// serveRedis serves r through m's Redis path, as a redisPath, or a
// leasePath when m has leases (tests).
func serveRedis(m *Middleware, w http.ResponseWriter, r *http.Request) {
	if m.lease != nil {
		(*leasePath)(m).ServeHTTP(w, r)
		return
	}
	(*redisPath)(m).ServeHTTP(w, r)
}

// serveAny serves r through the path of any middleware, as an anyPath
// (tests).
func serveAny(m *Middleware, w http.ResponseWriter, r *http.Request) {
	(*anyPath)(m).ServeHTTP(w, r)
}
