package persist

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Options configure a Saver.
type Options struct {
	// Path is the zone's snapshot file. Empty, the zone's counts are
	// kept in memory only: the saver restores them from Prev and saves
	// nothing.
	Path string
	// Interval is how often the zone is saved; the lease of its file
	// (see Claim) lasts three of them.
	Interval time.Duration
	// Prev is the live zone the new one replaces (a reload), if any: its
	// counts are newer than the file's, so the new zone takes them
	// instead.
	Prev *ratelimit.Zone
	// Owns, if set, reports at every interval whether the saver still
	// keeps the file: false when a newer zone of the same counts does,
	// and the interval's save is skipped.
	Owns func(*Saver) bool
	// Log, if set, receives what the saver has to report (see Event),
	// which the host words in its own log and may count.
	Log func(Event)
}

// EventKind says what an Event reports.
type EventKind int

// What a Saver reports.
const (
	// Restored: the zone took Keys keys, at At, From its file or from
	// "the zone it replaces".
	Restored EventKind = iota
	// NoSnapshot: nothing to restore, no file at From yet; the zone
	// starts empty.
	NoSnapshot
	// RestoreFailed: the zone starts empty, its snapshot refused or
	// unreadable (Err).
	RestoreFailed
	// Held: another process holds the file (Err): this one neither
	// restores nor saves it until that process lets go.
	Held
	// Unusable: the file or its directory is refused (Err): the zone
	// runs without snapshots until that changes.
	Unusable
	// Acquired: the file, held or refused when the saver started, is
	// this process's now: saved from now on.
	Acquired
	// TakenOver: another process took the file over (Err): no longer
	// saved here.
	TakenOver
	// Saved: a snapshot of Keys keys, as of At, was written.
	Saved
	// SaveFailed: a snapshot could not be written (Err); the zone runs
	// on. Repeat is set when the same failure was reported without
	// Repeat less than a minute ago: count it, do not log it.
	SaveFailed
	// SavedAgain: a snapshot was written after failures.
	SavedAgain
)

// An Event is what a Saver reports to its host.
type Event struct {
	Kind EventKind
	// Keys is how many keys a restore or a save held.
	Keys int
	// From is where a restore took its counts, or looked for them.
	From string
	// At is the time of a restore, or of a saved snapshot.
	At  time.Time
	Err error
	// Repeat marks a SaveFailed not worth a log line (see SaveFailed).
	Repeat bool
}

// A Saver keeps one zone's snapshot file: it restores the zone when it
// starts, claims the file (see Claim) and saves the zone every interval
// while it holds it, and lets go of it when closed. Every failure is an
// Event, and the zone runs on: a saver never fails a config load.
type Saver struct {
	zone  *ratelimit.Zone
	path  string
	every time.Duration
	owns  func(*Saver) bool
	log   func(Event)

	stop      chan struct{}
	done      chan struct{} // closed when the loop returns
	stopOnce  sync.Once
	inherited bool

	// mu guards the claim and the saves, and lastErr and lastLog, which
	// keep a failing disk to a log line a minute.
	mu      sync.Mutex
	claimed bool
	lastErr string
	lastLog time.Time
}

// Start restores z, a new zone made with ratelimit.Options.Persist, from
// o.Prev if set, else from its file if this process can claim it, and
// then saves it every interval. A saver that cannot claim its file tries
// again at every interval, quietly, and saves once it can.
func Start(z *ratelimit.Zone, o Options) *Saver {
	sv := newSaver(z, o)
	if sv.path != "" {
		sv.claim()
	}
	sv.restore(o.Prev)
	if sv.path == "" {
		close(sv.done)
		return sv
	}
	go sv.loop(false)
	return sv
}

// Resume saves z, which kept its counts (a zone that slept and took a key
// again), every interval: it restores nothing, and claims the file on a
// goroutine of its own, since its caller may hold z's shards.
func Resume(z *ratelimit.Zone, o Options) *Saver {
	sv := newSaver(z, o)
	if sv.path == "" {
		close(sv.done)
		return sv
	}
	go sv.loop(true)
	return sv
}

func newSaver(z *ratelimit.Zone, o Options) *Saver {
	return &Saver{zone: z, path: o.Path, every: o.Interval, owns: o.Owns, log: o.Log,
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Inherited reports whether the zone took its counts from Options.Prev:
// counts newer than its file's.
func (sv *Saver) Inherited() bool { return sv.inherited }

// report hands e to the host's log, if any.
func (sv *Saver) report(e Event) {
	if sv.log != nil {
		sv.log(e)
	}
}

// claim makes this process the one that reads and writes the file, or
// reports why not: Held or Unusable.
func (sv *Saver) claim() {
	err := Claim(sv.path, sv.every)
	sv.mu.Lock()
	sv.claimed = err == nil
	sv.mu.Unlock()
	switch {
	case err == nil:
	case errors.Is(err, ErrClaimed):
		sv.report(Event{Kind: Held, Err: err})
	default:
		sv.report(Event{Kind: Unusable, Err: err})
	}
}

// restore fills the zone from prev, if set, else from the file if the
// saver holds it, and reports how that went.
func (sv *Saver) restore(prev *ratelimit.Zone) {
	now := time.Now()
	var n int
	var err error
	from := sv.path
	switch {
	case prev != nil:
		from = "the zone it replaces"
		var buf bytes.Buffer
		if _, err = prev.Snapshot(&buf, now); err == nil {
			n, err = sv.zone.Restore(&buf, now)
			sv.inherited = err == nil
		}
	case sv.claimed:
		n, err = Load(sv.zone, sv.path, now)
	default:
		return
	}
	switch {
	case err == nil:
		sv.report(Event{Kind: Restored, Keys: n, From: from, At: now})
	case errors.Is(err, os.ErrNotExist):
		sv.report(Event{Kind: NoSnapshot, From: from})
	default:
		sv.report(Event{Kind: RestoreFailed, From: from, Err: err})
	}
}

// loop saves the zone every interval, while Owns says so, until Close. A
// resumed saver (claim) claims its file first, unless closed by then.
func (sv *Saver) loop(claim bool) {
	defer close(sv.done)
	if claim {
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
			if sv.owns == nil || sv.owns(sv) {
				sv.Save()
			}
		}
	}
}

// Save writes a snapshot of the zone now, if the saver holds its file or
// can claim it, whatever Owns says, and reports how that went. The same
// failure is reported without Repeat at most once a minute.
func (sv *Saver) Save() {
	if sv.path == "" {
		return
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if !sv.claimed {
		if Claim(sv.path, sv.every) != nil {
			return
		}
		sv.claimed = true
		sv.report(Event{Kind: Acquired})
	}
	now := time.Now()
	err := Renew(sv.path)
	if errors.Is(err, ErrClaimed) {
		sv.claimed = false
		Release(sv.path)
		sv.report(Event{Kind: TakenOver, Err: err})
		return
	}
	var n int
	if err == nil {
		n, err = Save(sv.zone, sv.path, now)
	}
	if err != nil {
		failed := time.Now()
		msg := err.Error()
		repeat := msg == sv.lastErr && failed.Sub(sv.lastLog) < time.Minute
		if !repeat {
			sv.lastErr, sv.lastLog = msg, failed
		}
		sv.report(Event{Kind: SaveFailed, Err: err, Repeat: repeat})
		return
	}
	sv.report(Event{Kind: Saved, Keys: n, At: now})
	if sv.lastErr != "" {
		sv.lastErr = ""
		sv.report(Event{Kind: SavedAgain})
	}
}

// Close stops the saver's loop, saves a last time if final (the zone is
// released for good, and its counts are the file's to keep: the host
// says so, Owns is not asked), and lets go of the file. It returns once
// all that is done; a host that holds the zone's shards calls it on a
// goroutine of its own, since a save reads them.
func (sv *Saver) Close(final bool) {
	sv.stopOnce.Do(func() { close(sv.stop) })
	<-sv.done
	if final {
		sv.Save()
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.claimed {
		sv.claimed = false
		Release(sv.path)
	}
}
