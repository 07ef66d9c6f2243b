package traefikplugin

import (
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/windowlimit/windowlimit/shared/persist"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// PersistConfig saves the middleware's in-memory counts to disk, so that
// they survive a restart of Traefik. Traefik tells a plugin nothing at
// shutdown: snapshots are written every Interval, and when an idle
// middleware leaves the registry, so a crash or a stop loses at most the
// requests of one interval.
type PersistConfig struct {
	// Directory is where the snapshot files are written, one per
	// middleware; it must be an absolute path. It is created with mode
	// 0700 if missing. Persistence is off unless it is set. In a
	// container, mount a volume there.
	Directory string `json:"directory,omitempty" yaml:"directory,omitempty"`
	// Interval is how often the counts are saved, such as "10s"; a bare
	// number is seconds. Empty means 10s; it is at least 1s.
	Interval string `json:"interval,omitempty" yaml:"interval,omitempty"`
}

// persistOptions are the options of the persist block.
var persistOptions = []string{"directory", "interval"}

// defaultPersistInterval is PersistConfig.Interval's default.
const defaultPersistInterval = 10 * time.Second

// persistSettings is a validated PersistConfig.
type persistSettings struct {
	dir      string
	interval time.Duration
}

// persistLog receives the lines about snapshots: Traefik's ERROR level
// (see errorLog), the only one a plugin can be sure to be seen at; and
// persistInfoLog the line that a restore went well, at DEBUG (see the
// levels in docs/traefik.md).
var (
	persistLog     = errorLog
	persistInfoLog = debugLog
)

// persistSettings validates c.Persist for a middleware with the Redis
// store (redis) and onStoreError local (local), and returns nil when
// nothing is persisted.
func (c *Config) persistSettings(redis, local bool) (*persistSettings, error) {
	p := c.Persist
	if p == nil {
		return nil, nil
	}
	if p.Directory == "" {
		if p.Interval != "" {
			return nil, fieldError("persist.directory", "required with persist.interval (persistence is off without a directory)")
		}
		return nil, nil
	}
	if !filepath.IsAbs(p.Directory) {
		return nil, fieldError("persist.directory", "must be an absolute path, got "+strconv.Quote(p.Directory))
	}
	s := &persistSettings{dir: filepath.Clean(p.Directory), interval: defaultPersistInterval}
	if p.Interval != "" {
		d, err := parseDuration("persist.interval", p.Interval)
		if err != nil {
			return nil, err
		}
		if d < time.Second {
			return nil, fieldError("persist.interval", "must be at least 1s, got "+strconv.Quote(p.Interval))
		}
		s.interval = d
	}
	if redis && !local {
		return nil, fieldError("persist", "the Redis store keeps the counts (Redis persists them by its own configuration); "+
			"persist applies to the in-memory store, and to onStoreError local")
	}
	return s, nil
}

// idSuffix tells zones apart in the registry by their persistence.
func (p *persistSettings) idSuffix() string {
	if p == nil {
		return ""
	}
	return " persist=" + strconv.Quote(p.dir) + " every " + p.interval.String()
}

// saverOptions returns the options of the persist.Saver of middleware
// name's zone z, persisted as ps: saved while it is its name's saver in
// the registry, its events worded for Traefik's log.
func saverOptions(name string, z *ratelimit.Zone, ps *persistSettings) persist.Options {
	path := filepath.Join(ps.dir, persist.FileName(name, z.Scope(), z.Rule()))
	return persist.Options{Path: path, Interval: ps.interval, Log: persistEvents(name, path),
		Owns: func(sv *persist.Saver) bool {
			registryMu.Lock()
			defer registryMu.Unlock()
			r := registry[name]
			return r != nil && r.saver == sv
		}}
}

// startSaver restores z, new and keeping snapshots, from prev, the zone of
// its lineage it replaces, if any, else from its file if this process
// holds it, and returns the saver that saves it every interval; nil when
// ps is (the counts are kept in memory only). Every failure is one log
// line, and the zone starts empty or runs without snapshots.
func startSaver(name string, z *ratelimit.Zone, ps *persistSettings, prev *ratelimit.Zone) *persist.Saver {
	if ps == nil {
		persist.Start(z, persist.Options{Prev: prev, Log: persistEvents(name, "")}) // saves nothing
		return nil
	}
	o := saverOptions(name, z, ps)
	o.Prev = prev
	return persist.Start(z, o)
}

// persistEvents words the events of middleware name's saver, of the file
// at path, for Traefik's log: the restore at persistInfoLog, the rest at
// persistLog; a snapshot still missing says nothing.
func persistEvents(name, path string) func(persist.Event) {
	return func(e persist.Event) {
		switch e.Kind {
		case persist.Restored:
			io.WriteString(persistInfoLog, "windowlimit: info: middleware "+strconv.Quote(name)+": restored "+strconv.Itoa(e.Keys)+" keys from "+e.From+"\n")
		case persist.RestoreFailed:
			io.WriteString(persistLog, "windowlimit: error: middleware "+strconv.Quote(name)+": starts empty, its snapshot could not be restored: "+e.Err.Error()+"\n")
		case persist.Held:
			io.WriteString(persistLog, "windowlimit: warning: middleware "+strconv.Quote(name)+": snapshot "+path+
				" is held by another process (another Traefik on this directory?): this one neither restores nor saves it;"+
				" give each instance its own persist.directory ("+e.Err.Error()+")\n")
		case persist.Unusable:
			io.WriteString(persistLog, "windowlimit: error: middleware "+strconv.Quote(name)+": runs without snapshots: "+e.Err.Error()+"\n")
		case persist.Acquired:
			io.WriteString(persistLog, "windowlimit: info: middleware "+strconv.Quote(name)+": snapshot "+path+" is this process's now: saved from now on\n")
		case persist.TakenOver:
			io.WriteString(persistLog, "windowlimit: warning: middleware "+strconv.Quote(name)+": snapshot taken over by another process, no longer saved here: "+e.Err.Error()+"\n")
		case persist.SaveFailed:
			if !e.Repeat {
				io.WriteString(persistLog, "windowlimit: error: middleware "+strconv.Quote(name)+": snapshot failed, the zone runs on without one: "+e.Err.Error()+"\n")
			}
		case persist.SavedAgain:
			io.WriteString(persistLog, "windowlimit: info: middleware "+strconv.Quote(name)+": snapshots written again\n")
		}
	}
}
