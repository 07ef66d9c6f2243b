package caddymodule

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/windowlimit/windowlimit/shared/persist"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Persist says whether and where the handler's memory zones are saved,
// so that their counts survive a restart of Caddy. Zones counted in Redis
// need none of it (Redis persists by its own configuration); a zone
// behind Redis with on_store_error local is a memory zone while Redis
// fails, and is persisted like one.
type Persist struct {
	// Off disables persistence: every restart starts every zone empty,
	// as before persistence existed. Directory and Interval must then be
	// unset.
	Off bool `json:"off,omitempty"`

	// Directory is where the snapshots are written, one file per zone;
	// it must be an absolute path. It is created with mode 0700 if
	// missing. The default is the folder rate_limit in Caddy's data
	// directory (caddy.AppDataDir()).
	Directory string `json:"directory,omitempty"`

	// Interval is how often every zone is saved, so that a crash loses at
	// most the requests of one interval; a zone is also saved when it is
	// released for good (a graceful stop, a reload that drops it). It is
	// at least 1s; the default is 10s.
	Interval caddy.Duration `json:"interval,omitempty"`
}

// DefaultPersistInterval is how often zones are saved by default.
const DefaultPersistInterval = 10 * time.Second

// MinPersistInterval is the shortest Persist.Interval.
const MinPersistInterval = time.Second

// persistPlan is a handler's validated persistence: nil when off.
type persistPlan struct {
	dir      string
	interval time.Duration
}

// persistByDefault is whether a handler without a persist setting
// persists its memory zones; the package's tests turn it off, so that
// zones of one name in different tests do not share counts through the
// data directory.
var persistByDefault = true

// persistDir returns the default snapshot directory.
func persistDir() string { return filepath.Join(caddy.AppDataDir(), "rate_limit") }

// plan validates p for a handler whose zones are counted in memory
// (memory) or not, and returns the plan, nil when nothing is persisted. A
// persist block of a Redis store without on_store_error local would do
// nothing: it is refused.
func (p *Persist) plan(memory bool) (*persistPlan, error) {
	if p != nil && p.Off {
		if p.Directory != "" || p.Interval != 0 {
			return nil, errors.New("persist: off takes no directory or interval")
		}
		return nil, nil
	}
	if p == nil && !persistByDefault {
		return nil, nil
	}
	plan := &persistPlan{dir: persistDir(), interval: DefaultPersistInterval}
	if p != nil {
		if p.Directory != "" {
			if !filepath.IsAbs(p.Directory) {
				return nil, fmt.Errorf("persist: directory must be an absolute path, got %q", p.Directory)
			}
			plan.dir = filepath.Clean(p.Directory)
		}
		if p.Interval < 0 {
			return nil, fmt.Errorf("persist: interval must be positive, got %v", time.Duration(p.Interval))
		}
		if p.Interval != 0 {
			if time.Duration(p.Interval) < MinPersistInterval {
				return nil, fmt.Errorf("persist: interval %v is too short (at least %v)", time.Duration(p.Interval), MinPersistInterval)
			}
			plan.interval = time.Duration(p.Interval)
		}
	}
	if !memory {
		if p != nil {
			return nil, errors.New("persist: the Redis store keeps the counts (Redis persists them by its own configuration); " +
				"persist applies to the memory store, and to on_store_error local")
		}
		return nil, nil // Redis holds the counts
	}
	return plan, nil
}

// poolSuffix tells zones apart in the pool by their persistence, so that
// a zone persisted by one handler is never shared with one that is not.
func (p *persistPlan) poolSuffix() string {
	if p == nil {
		return " persist=off"
	}
	return fmt.Sprintf(" persist=%q every %v", p.dir, p.interval)
}

// unmarshalPersist parses `persist off` or `persist { directory <dir>
// interval <duration> }`, the dispenser being on "persist".
func (h *Handler) unmarshalPersist(d *caddyfile.Dispenser) error {
	p := new(Persist)
	if d.NextArg() {
		if d.Val() != "off" {
			return d.Errf("persist: want off or a block { directory ... interval ... }, got %q", d.Val())
		}
		if d.NextArg() {
			return d.ArgErr()
		}
		if d.NextBlock(d.Nesting()) {
			return d.Err("persist off takes no block")
		}
		p.Off = true
		h.Persist = p
		return nil
	}
	seen := make(map[string]bool)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if seen[sub] {
			return d.Errf("persist: duplicate %s", sub)
		}
		seen[sub] = true
		switch sub {
		case "directory":
			dir, err := oneArg(d)
			if err != nil {
				return err
			}
			if !filepath.IsAbs(dir) {
				return d.Errf("persist: directory must be an absolute path, got %q", dir)
			}
			p.Directory = dir
		case "interval":
			dur, err := positiveDuration(d)
			if err != nil {
				return err
			}
			if time.Duration(dur) < MinPersistInterval {
				return d.Errf("persist: interval %v is too short (at least %v)", time.Duration(dur), MinPersistInterval)
			}
			p.Interval = dur
		default:
			return unknownSubdirective(d, "persist: ", persistSubdirectives, "")
		}
	}
	h.Persist = p
	return nil
}

// zoneSaver is the persistence of one pooled zone: its persist.Saver,
// which restores it and, when the zone is persisted and its file claimed,
// saves it every interval and once more when the zone is released for
// good, with what Caddy adds: the lineage's registry (savers), the log
// lines, the metrics and the admin API's view. A zone whose persistence
// a reload turned off keeps a saver too, without a plan: it keeps its
// predecessor's counts in memory, and hands them on.
type zoneSaver struct {
	saver *persist.Saver
	zone  *ratelimit.Zone
	// lineage names the zone's counts: its name, key and shape (the
	// snapshot's file name, without a directory).
	lineage string
	// gen is the config load that made the zone (its caddy.Context's
	// metrics registry): two zones of one lineage in one load are two sites or
	// handlers that would share a file.
	gen    any
	plan   *persistPlan
	path   string // "" when the zone is not saved
	logger *zap.Logger

	// mu guards the last snapshot written and the restore, for the admin
	// API.
	mu                      sync.Mutex
	savedAt, restoredAt     time.Time
	savedKeys, restoredKeys int
}

// savers maps a lineage to the saver of its newest zone, which alone
// writes the lineage's file. A reload that changes a zone's limit, or its
// persistence, makes a new zone before it releases the old one; the new
// one restores from the old one's memory, then owns the file, and the old
// one's release writes nothing over it.
var savers = struct {
	sync.Mutex
	byLineage map[string]*zoneSaver
}{byLineage: make(map[string]*zoneSaver)}

// persistCounts are the process's snapshot counters per zone name, for
// metrics.
var persistCounts = struct {
	sync.Mutex
	byName map[string]*persistCount
}{byName: make(map[string]*persistCount)}

type persistCount struct{ written, failed, restored uint64 }

func countPersist(name string, f func(*persistCount)) {
	persistCounts.Lock()
	c := persistCounts.byName[name]
	if c == nil {
		c = new(persistCount)
		persistCounts.byName[name] = c
	}
	f(c)
	persistCounts.Unlock()
}

// newPersistedZone makes the zone of name for a config load (gen), with
// its saver when its counts are kept: when plan persists it, or when a
// live zone of its lineage kept them (a reload that turned persist off
// keeps the counts in memory). The second zone of one lineage in one
// load (two sites with a zone of one name and key, and different limits)
// is warned about and neither restored nor saved.
func newPersistedZone(name string, rule ratelimit.Rule, opts ratelimit.Options, plan *persistPlan, gen any, logger *zap.Logger) (pooledZone, error) {
	lineage := persist.FileName(name, opts.Scope, rule)
	savers.Lock()
	prev := savers.byLineage[lineage]
	savers.Unlock()
	if prev != nil && prev.gen == gen {
		logger.Warn("rate_limit zones of one name, key and window in two places share one snapshot: "+
			"only the first is restored and saved; give them distinct names",
			zap.String("zone", name), zap.String("key", opts.Scope))
		plan, prev = nil, nil
	}
	opts.Persist = plan != nil || prev != nil
	z, err := ratelimit.NewZone(name, rule, opts)
	if err != nil {
		return pooledZone{}, err
	}
	p := pooledZone{Zone: z}
	if opts.Persist {
		p.saver = startSaver(z, lineage, gen, plan, prev, logger)
	}
	return p, nil
}

// startSaver makes the new zone z, made with Options.Persist, the newest
// of its lineage and starts its persist.Saver: restored from prev, the
// live zone of its lineage if any (a reload), else from its snapshot
// file, then saved every interval if plan persists it. Every failure is
// one log line and an empty zone, or a zone that runs without snapshots:
// never a failed config load.
func startSaver(z *ratelimit.Zone, lineage string, gen any, plan *persistPlan, prev *zoneSaver, logger *zap.Logger) *zoneSaver {
	zs := &zoneSaver{zone: z, lineage: lineage, gen: gen, plan: plan, logger: logger}
	o := persist.Options{Owns: zs.owns, Log: zs.log}
	if plan != nil {
		zs.path = filepath.Join(plan.dir, lineage)
		o.Path, o.Interval = zs.path, plan.interval
	}
	if prev != nil {
		o.Prev = prev.zone
	}
	savers.Lock()
	savers.byLineage[lineage] = zs
	savers.Unlock()
	zs.saver = persist.Start(z, o)
	return zs
}

// owns reports whether zs is still the newest saver of its lineage: only
// that one writes the file.
func (zs *zoneSaver) owns(*persist.Saver) bool {
	savers.Lock()
	defer savers.Unlock()
	return savers.byLineage[zs.lineage] == zs
}

// log words an event of the zone's saver in Caddy's log, and counts it
// for the metrics and the admin API.
func (zs *zoneSaver) log(e persist.Event) {
	name := zs.zone.Name()
	switch e.Kind {
	case persist.Restored:
		zs.mu.Lock()
		zs.restoredAt, zs.restoredKeys = e.At, e.Keys
		zs.mu.Unlock()
		countPersist(name, func(c *persistCount) { c.restored += uint64(e.Keys) })
		zs.logger.Info("rate_limit zone restored", zap.String("zone", name), zap.Int("keys", e.Keys), zap.String("from", e.From))
	case persist.NoSnapshot:
		zs.logger.Info("rate_limit zone starts empty: no snapshot yet", zap.String("zone", name), zap.String("file", e.From))
	case persist.RestoreFailed:
		zs.logger.Error("rate_limit zone starts empty: its snapshot could not be restored", zap.String("zone", name), zap.Error(e.Err))
	case persist.Held:
		zs.logger.Warn("rate_limit zone's snapshot is held by another process (another Caddy on this data directory?): "+
			"this one neither restores nor saves it until that process stops; give each instance its own persist directory",
			zap.String("zone", name), zap.String("file", zs.path), zap.Error(e.Err))
	case persist.Unusable:
		zs.logger.Error("rate_limit zone runs without snapshots", zap.String("zone", name), zap.Error(e.Err))
	case persist.Acquired:
		zs.logger.Info("rate_limit zone's snapshot is this process's now: saved from now on", zap.String("zone", name))
	case persist.TakenOver:
		zs.logger.Warn("rate_limit zone's snapshot was taken over by another process: this one no longer saves it",
			zap.String("zone", name), zap.Error(e.Err))
	case persist.Saved:
		zs.mu.Lock()
		zs.savedAt, zs.savedKeys = e.At, e.Keys
		zs.mu.Unlock()
		countPersist(name, func(c *persistCount) { c.written++ })
	case persist.SaveFailed:
		countPersist(name, func(c *persistCount) { c.failed++ })
		if !e.Repeat {
			zs.logger.Error("rate_limit zone snapshot failed; the zone runs on without one", zap.String("zone", name), zap.Error(e.Err))
		}
	case persist.SavedAgain:
		zs.logger.Info("rate_limit zone snapshot written again", zap.String("zone", name))
	}
}

// release stops the saver of a zone released for good and writes its last
// snapshot, unless a newer zone of its lineage keeps the counts, or the
// zone never took a key and read its counts from the file (caddy
// validate, a config replaced before it served): the file holds all it
// has. Then it lets go of the file.
func (zs *zoneSaver) release() {
	final := zs.owns(zs.saver) && (zs.saver.Inherited() || zs.zone.Stats().Used)
	zs.saver.Close(final)
	savers.Lock()
	if savers.byLineage[zs.lineage] == zs {
		delete(savers.byLineage, zs.lineage)
	}
	savers.Unlock()
}

// saverOf returns the saver of zone z, or nil.
func saverOf(z *ratelimit.Zone) *zoneSaver {
	savers.Lock()
	defer savers.Unlock()
	for _, zs := range savers.byLineage {
		if zs.zone == z {
			return zs
		}
	}
	return nil
}

// persistInfo is a zone's persistence in the admin API's zone view.
type persistInfo struct {
	// File is the zone's snapshot file.
	File string `json:"file"`
	// Interval is how often the zone is saved.
	Interval string `json:"interval"`
	// SavedAt is when the zone was last saved, in RFC 3339; absent if
	// never in this process.
	SavedAt string `json:"saved_at,omitempty"`
	// SavedKeys is how many keys that snapshot held.
	SavedKeys int `json:"saved_keys"`
	// RestoredAt is when the zone was restored, in RFC 3339; absent if
	// it started empty.
	RestoredAt string `json:"restored_at,omitempty"`
	// RestoredKeys is how many keys it restored: those whose window was
	// not over.
	RestoredKeys int `json:"restored_keys"`
	// Pending is how many restored keys have not been seen since: each
	// is put back on its first request.
	Pending int `json:"restored_pending"`
}

// persistInfoOf returns z's persistence for the admin API, nil if none.
func persistInfoOf(z *ratelimit.Zone) *persistInfo {
	zs := saverOf(z)
	if zs == nil || zs.plan == nil {
		return nil
	}
	info := &persistInfo{File: zs.path, Interval: zs.plan.interval.String(), Pending: z.Stats().Pending}
	zs.mu.Lock()
	defer zs.mu.Unlock()
	info.SavedKeys, info.RestoredKeys = zs.savedKeys, zs.restoredKeys
	if !zs.savedAt.IsZero() {
		info.SavedAt = zs.savedAt.UTC().Format(time.RFC3339Nano)
	}
	if !zs.restoredAt.IsZero() {
		info.RestoredAt = zs.restoredAt.UTC().Format(time.RFC3339Nano)
	}
	return info
}

// persistCollector reports the snapshot counters per zone name.
type persistCollector struct {
	written, failed, restored *prometheus.Desc
}

var persistStats = &persistCollector{
	written: prometheus.NewDesc("caddy_http_rate_limit_snapshots_written_total",
		"Snapshots of memory zones written to disk, by zone.", []string{"zone"}, nil),
	failed: prometheus.NewDesc("caddy_http_rate_limit_snapshot_failures_total",
		"Snapshots of memory zones that could not be written (the zone runs on), by zone.", []string{"zone"}, nil),
	restored: prometheus.NewDesc("caddy_http_rate_limit_snapshot_keys_restored_total",
		"Keys restored into memory zones from snapshots, by zone.", []string{"zone"}, nil),
}

// Describe implements prometheus.Collector.
func (c *persistCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.written
	ch <- c.failed
	ch <- c.restored
}

// Collect implements prometheus.Collector.
func (c *persistCollector) Collect(ch chan<- prometheus.Metric) {
	persistCounts.Lock()
	defer persistCounts.Unlock()
	for name, n := range persistCounts.byName {
		ch <- prometheus.MustNewConstMetric(c.written, prometheus.CounterValue, float64(n.written), name)
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(n.failed), name)
		ch <- prometheus.MustNewConstMetric(c.restored, prometheus.CounterValue, float64(n.restored), name)
	}
}
