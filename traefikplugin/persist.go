package traefikplugin

import (
	"bytes"
	"errors"
	"io"
	"os"
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

// saver saves the zone of one registered middleware every interval, once
// it holds the zone's snapshot file (see persist.Claim).
type saver struct {
	name    string
	zone    *ratelimit.Zone
	path    string
	every   time.Duration
	claimed bool
	tried   bool // claim was called, and logged
	stop    chan struct{}
	done    chan struct{} // closed when loop returns
	lastErr string
	lastLog time.Time
}

func newSaver(name string, z *ratelimit.Zone, p *persistSettings) *saver {
	return &saver{name: name, zone: z, every: p.interval, stop: make(chan struct{}), done: make(chan struct{}),
		path: filepath.Join(p.dir, persist.FileName(name, z.Scope(), z.Rule()))}
}

// claim makes this process the one that reads and writes the saver's
// file, or says in one line why not: another Traefik holds it, or the
// file or its directory is refused. The zone then runs without
// snapshots.
func (sv *saver) claim() {
	sv.tried = true
	err := persist.Claim(sv.path, sv.every)
	switch {
	case err == nil:
		sv.claimed = true
	case errors.Is(err, persist.ErrClaimed):
		io.WriteString(persistLog, "windowlimit: warning: middleware "+strconv.Quote(sv.name)+": snapshot "+sv.path+
			" is held by another process (another Traefik on this directory?): this one neither restores nor saves it;"+
			" give each instance its own persist.directory ("+err.Error()+")\n")
	default:
		io.WriteString(persistLog, "windowlimit: error: middleware "+strconv.Quote(sv.name)+": runs without snapshots: "+err.Error()+"\n")
	}
}

// restore fills z, new and keeping snapshots, from prev, the zone of its
// lineage it replaces, if any, else from sv's file if sv holds it. Every
// failure is one log line, and the zone starts empty.
func restore(name string, z *ratelimit.Zone, sv *saver, prev *ratelimit.Zone) {
	now := time.Now()
	var n int
	var err error
	var from string
	switch {
	case prev != nil:
		from = "the zone it replaces"
		var buf bytes.Buffer
		if _, err = prev.Snapshot(&buf, now); err == nil {
			n, err = z.Restore(&buf, now)
		}
	case sv != nil && sv.claimed:
		from = sv.path
		n, err = persist.Load(z, sv.path, now)
	default:
		return
	}
	switch {
	case err == nil:
		io.WriteString(persistInfoLog, "windowlimit: info: middleware "+strconv.Quote(name)+": restored "+strconv.Itoa(n)+" keys from "+from+"\n")
	case errors.Is(err, os.ErrNotExist):
	default:
		io.WriteString(persistLog, "windowlimit: error: middleware "+strconv.Quote(name)+": starts empty, its snapshot could not be restored: "+err.Error()+"\n")
	}
}

// loop saves the zone every interval until stop is closed. A saver that
// does not hold its file yet (a zone that woke) claims it first; one that
// cannot tries again at every interval, quietly, and saves once it can.
func (sv *saver) loop() {
	defer close(sv.done)
	if !sv.claimed && !sv.tried {
		select {
		case <-sv.stop:
			return
		default:
		}
		sv.claim()
	}
	tick := time.NewTicker(sv.every)
	defer tick.Stop()
	for {
		select {
		case <-sv.stop:
			return
		case <-tick.C:
			if sv.owns() {
				sv.save()
			}
		}
	}
}

// owns reports whether sv is still its name's saver in the registry.
func (sv *saver) owns() bool {
	registryMu.Lock()
	defer registryMu.Unlock()
	r := registry[sv.name]
	return r != nil && r.saver == sv
}

// save writes a snapshot, if sv holds its file, and logs a failure (the
// same one at most once a minute): the zone runs on without snapshots.
func (sv *saver) save() {
	if !sv.claimed {
		if persist.Claim(sv.path, sv.every) != nil {
			return
		}
		sv.claimed = true
		io.WriteString(persistLog, "windowlimit: info: middleware "+strconv.Quote(sv.name)+": snapshot "+sv.path+" is this process's now: saved from now on\n")
	}
	err := persist.Renew(sv.path)
	if errors.Is(err, persist.ErrClaimed) {
		sv.claimed = false
		persist.Release(sv.path)
		io.WriteString(persistLog, "windowlimit: warning: middleware "+strconv.Quote(sv.name)+": snapshot taken over by another process, no longer saved here: "+err.Error()+"\n")
		return
	}
	if err == nil {
		_, err = persist.Save(sv.zone, sv.path, time.Now())
	}
	if err != nil {
		now := time.Now()
		if msg := err.Error(); msg != sv.lastErr || now.Sub(sv.lastLog) >= time.Minute {
			sv.lastErr, sv.lastLog = msg, now
			io.WriteString(persistLog, "windowlimit: error: middleware "+strconv.Quote(sv.name)+": snapshot failed, the zone runs on without one: "+msg+"\n")
		}
		return
	}
	if sv.lastErr != "" {
		sv.lastErr = ""
		io.WriteString(persistLog, "windowlimit: info: middleware "+strconv.Quote(sv.name)+": snapshots written again\n")
	}
}

// halt stops the saver's loop, saves a last time if final (its zone left
// the registry idle, and no other zone of its name owns the file), and
// lets go of the file. That runs on a goroutine of its own, once the loop
// has returned: the caller may hold the zone's shards (see zoneSleeps).
func (sv *saver) halt(final bool) {
	close(sv.stop)
	go func() {
		<-sv.done
		if final {
			sv.save()
		}
		if sv.claimed {
			persist.Release(sv.path)
		}
	}()
}
