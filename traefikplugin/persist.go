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
// (see errorLog), the only one a plugin can be sure to be seen at.
var persistLog = errorLog

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

// saver saves the zone of one registered middleware every interval.
type saver struct {
	name    string
	zone    *ratelimit.Zone
	path    string
	every   time.Duration
	stop    chan struct{}
	done    chan struct{} // closed when loop returns
	lastErr string
	lastLog time.Time
}

func newSaver(name string, z *ratelimit.Zone, p *persistSettings) *saver {
	return &saver{name: name, zone: z, every: p.interval, stop: make(chan struct{}), done: make(chan struct{}),
		path: filepath.Join(p.dir, persist.FileName(name, z.Rule()))}
}

// restore fills the new zone of the saver from prev, the zone it
// replaces if that one was persisted to the same file, else from the
// file. Every failure is one log line, and the zone starts empty.
func (sv *saver) restore(prev *saver) {
	now := time.Now()
	var n int
	var err error
	from := sv.path
	if prev != nil && prev.path == sv.path {
		from = "the zone it replaces"
		var buf bytes.Buffer
		if _, err = prev.zone.Snapshot(&buf, now); err == nil {
			n, err = sv.zone.Restore(&buf, now)
		}
	} else {
		n, err = persist.Load(sv.zone, sv.path, now)
	}
	switch {
	case err == nil:
		io.WriteString(persistLog, "windowlimit: middleware "+strconv.Quote(sv.name)+": restored "+strconv.Itoa(n)+" keys from "+from+"\n")
	case errors.Is(err, os.ErrNotExist):
	default:
		io.WriteString(persistLog, "windowlimit: middleware "+strconv.Quote(sv.name)+": starts empty, its snapshot could not be restored: "+err.Error()+"\n")
	}
}

// loop saves the zone every interval until stop is closed.
func (sv *saver) loop() {
	defer close(sv.done)
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

// save writes a snapshot, and logs a failure (the same one at most once a
// minute): the zone runs on without snapshots.
func (sv *saver) save() {
	if _, err := persist.Save(sv.zone, sv.path, time.Now()); err != nil {
		now := time.Now()
		if msg := err.Error(); msg != sv.lastErr || now.Sub(sv.lastLog) >= time.Minute {
			sv.lastErr, sv.lastLog = msg, now
			io.WriteString(persistLog, "windowlimit: middleware "+strconv.Quote(sv.name)+": snapshot failed, the zone runs on without one: "+msg+"\n")
		}
		return
	}
	if sv.lastErr != "" {
		sv.lastErr = ""
		io.WriteString(persistLog, "windowlimit: middleware "+strconv.Quote(sv.name)+": snapshots written again\n")
	}
}

// halt stops the saver's loop, and saves a last time if final: its zone
// left the registry idle, and no other zone of its name owns the file.
// The last save runs on a goroutine of its own, once the loop has
// returned: the caller may hold the zone's shards (see zoneSleeps).
func (sv *saver) halt(final bool) {
	close(sv.stop)
	if final {
		go func() {
			<-sv.done
			sv.save()
		}()
	}
}
