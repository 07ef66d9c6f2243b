package traefikplugin

import (
	"sync"
	"time"

	"github.com/windowlimit/windowlimit/shared/persist"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Traefik calls New on every reload of the dynamic configuration and never
// tells the instances it replaces to stop. The zones therefore live here,
// one per middleware name: a reload with the same rule gets the same zone
// back, with its counts, and a reload that changes the rule closes the old
// zone (stopping its sweeper) so reloads never pile up goroutines.
//
// Nor does Traefik say when a middleware is removed from the
// configuration: a provider that names middlewares afresh on every deploy
// would leave a zone and its sweeper behind for each. So a zone that has
// held nothing that counts (every key's window over) for idleAfter, with
// no New for its name meanwhile, goes to sleep: its sweeper ends and the
// registry forgets it and the name's redis binding. That loses nothing:
// the zone still answers for a handler that keeps it, and its first new
// key wakes it (restarting the sweeper) and puts it back here if the name
// has no other zone by then, so a reload finds its counts.
var (
	registryMu sync.Mutex
	registry   = make(map[string]*registered)
)

// idleMinimum is the least time a zone holds nothing, and its name sees
// no New, before it sleeps: ten sweeps at the shortest sweep interval, so
// that a reload's New and the requests after it never race the zone's
// release. Sleeping loses no count, so a short time is safe; a variable
// for tests.
var idleMinimum = 10 * time.Second

// idleAfter returns how long a zone of window must stay empty, and its
// name without a New, before it sleeps: two windows, at least idleMinimum.
func idleAfter(window time.Duration) time.Duration {
	if d := 2 * window; d > idleMinimum {
		return d
	}
	return idleMinimum
}

// registered is a zone and the ratelimit.ZoneID it was made for.
type registered struct {
	id   string
	zone *ratelimit.Zone
	// lastNew is when New last asked for the zone.
	lastNew time.Time
	// saver, when the middleware has persist, saves the zone (see
	// startSaver in persist.go).
	saver   *persist.Saver
	persist *persistSettings
	// base is the zone's ratelimit.ZoneID: id without persistence.
	base string
	// lineage names the counts the zone holds: its name, scope and
	// shape (its snapshot's file name); keeps is set when it keeps
	// snapshots (Options.Persist), and so hands its counts on to the next
	// zone of its lineage, whatever persist becomes.
	lineage string
	keeps   bool
	// as is what the zone registers as when it wakes (see zoneWoken).
	as *wokenAs
}

// wokenAs is the id and persistence a sleeping zone registers with when
// it wakes: those of its last New, which a reload that removes persist
// changes without making a new zone. registryMu guards it.
type wokenAs struct {
	id, base, lineage string
	persist           *persistSettings
	keeps             bool
}

// zoneFor returns the zone of the middleware name for rule, maxKeys, the
// key's scope, ban (0: none) and persistence ps (nil: none), reusing the registered one when
// they match. A new persisted zone is restored before anyone gets it:
// from the zone of the name it replaces, if that one kept snapshots, or
// from its snapshot file. A reload that only removes persist keeps the
// zone and its counts, and stops its saver: a change of persistence is
// not a change of what a count means. The restore happens without
// registryMu, whose lock order comes after a zone's shards.
func zoneFor(name string, rule ratelimit.Rule, maxKeys int, scope string, ban time.Duration, ps *persistSettings) (*ratelimit.Zone, error) {
	opts := ratelimit.Options{MaxKeys: maxKeys, Scope: scope, Persist: ps != nil, Ban: ban}
	base := ratelimit.ZoneID(name, rule, opts)
	id := base + ps.idSuffix()
	lineage := persist.FileName(name, scope, rule)
	registryMu.Lock()
	var prev *ratelimit.Zone
	if r := registry[name]; r != nil {
		if r.id == id {
			r.lastNew = time.Now()
			registryMu.Unlock()
			return r.zone, nil
		}
		if r.keeps && ps == nil && r.base == base {
			// persist removed: the zone stays, its saver stops.
			sv := r.saver
			// One assignment each: yaegi v0.16 panics on nils assigned
			// to typed fields at once.
			r.id = id
			r.saver = nil
			r.persist = nil
			r.lastNew = time.Now()
			r.as.id = id
			r.as.persist = nil
			registryMu.Unlock()
			if sv != nil {
				go sv.Close(false)
			}
			return r.zone, nil
		}
		if r.keeps && r.lineage == lineage {
			prev = r.zone
		}
	}
	registryMu.Unlock()
	opts.Persist = opts.Persist || prev != nil
	as := &wokenAs{id: id, base: base, lineage: lineage, persist: ps, keeps: opts.Persist}
	opts.Evicting = fullZoneLog(name, maxKeys)
	opts.SleepAfter = idleAfter(rule.Window)
	opts.Sleep = func(z *ratelimit.Zone) bool { return zoneSleeps(name, z, opts.SleepAfter) }
	opts.Woken = func(z *ratelimit.Zone) { zoneWoken(name, as, z) }
	z, err := ratelimit.NewZone(name, rule, opts)
	if err != nil {
		return nil, err
	}
	var sv *persist.Saver
	if opts.Persist {
		sv = startSaver(name, z, ps, prev)
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if r := registry[name]; r != nil {
		if r.id == id { // another New made it meanwhile
			z.Close()
			if sv != nil {
				go sv.Close(false)
			}
			r.lastNew = time.Now()
			return r.zone, nil
		}
		// Handlers of the previous configuration may still be serving:
		// a closed zone keeps answering, it only stops sweeping. The new
		// zone owns the snapshot file now.
		r.zone.Close()
		if r.saver != nil {
			go r.saver.Close(false)
		}
		delete(registry, name)
	}
	registry[name] = &registered{id: id, base: base, lineage: lineage, zone: z, lastNew: time.Now(),
		saver: sv, persist: ps, keeps: opts.Persist, as: as}
	return z, nil
}

// zoneSleeps is asked by the sweeper of name's zone z, which has held
// nothing that counts for idle, whether z may sleep: not while New asked
// for it within idle. A zone that sleeps is forgotten, with the name's
// redis binding (see releaseIdleRedis). A zone the registry no longer
// holds (replaced by a new rule) sleeps as it likes.
func zoneSleeps(name string, z *ratelimit.Zone, idle time.Duration) bool {
	registryMu.Lock()
	defer registryMu.Unlock()
	r := registry[name]
	if r == nil || r.zone != z {
		return true
	}
	if time.Since(r.lastNew) < idle {
		return false
	}
	delete(registry, name)
	if r.saver != nil {
		go r.saver.Close(true) // saves once the zone's shards are unlocked
	}
	redisMu.Lock()
	releaseIdleRedis(name)
	redisMu.Unlock()
	return true
}

// zoneWoken takes back name's zone z, which slept and took a key again,
// as its last New made it (as): a handler still serves it, and a reload
// must find its counts. The request that woke z calls it, with a shard of
// z locked (the lock order is a zone's shards, then registryMu, as in
// zoneSleeps); the saver claims its file on a goroutine of its own. If
// the name has another zone by now (a reload made one while z slept),
// that one stays: z serves only handlers Traefik is dropping.
func zoneWoken(name string, as *wokenAs, z *ratelimit.Zone) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if registry[name] == nil {
		r := &registered{id: as.id, base: as.base, lineage: as.lineage, zone: z, lastNew: time.Now(),
			persist: as.persist, keeps: as.keeps, as: as}
		if as.persist != nil {
			r.saver = persist.Resume(z, saverOptions(name, z, as.persist))
		}
		registry[name] = r
	}
}
