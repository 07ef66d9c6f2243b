package persist

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// events records what a Saver reports.
type events struct {
	mu   sync.Mutex
	list []Event
}

func (e *events) log(ev Event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

// of returns the events of kind k so far.
func (e *events) of(k EventKind) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.list {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// waitFor waits up to five seconds for an event of kind k.
func (e *events) waitFor(t *testing.T, k EventKind) Event {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got := e.of(k); len(got) > 0 {
			return got[0]
		}
	}
	t.Fatalf("no event %d in 5s; got %+v", k, e.list)
	return Event{}
}

var saverRule = ratelimit.Rule{Window: time.Hour, Limit: 2}

// limited reports whether z refuses client, at its limit.
func limited(z *ratelimit.Zone, client string) bool {
	return !ratelimit.TakeAt(z, client, time.Now()).Allowed
}

// TestSaverRestart: a saver's last save at Close holds the zone's counts,
// and the saver of the next process's zone restores them; a file not yet
// written is NoSnapshot, and Close lets go of the file.
func TestSaverRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snaps", FileName("login", "", saverRule))
	var log events
	z := persistZone(t, "login", saverRule)
	sv := Start(z, Options{Path: path, Interval: time.Hour, Log: log.log})
	if got := log.of(NoSnapshot); len(got) != 1 || got[0].From != path {
		t.Fatalf("NoSnapshot events %+v", got)
	}
	limited(z, "client")
	limited(z, "client")
	sv.Close(true)
	if got := log.of(Saved); len(got) != 1 || got[0].Keys != 1 {
		t.Fatalf("Saved events %+v, want one of 1 key", got)
	}
	if _, err := os.Stat(path + ".lock"); !os.IsNotExist(err) {
		t.Fatalf("Close kept the lock file: %v", err)
	}

	var next events
	z2 := persistZone(t, "login", saverRule)
	sv2 := Start(z2, Options{Path: path, Interval: time.Hour, Log: next.log})
	defer sv2.Close(false)
	if got := next.of(Restored); len(got) != 1 || got[0].Keys != 1 || got[0].From != path || sv2.Inherited() {
		t.Fatalf("Restored events %+v, inherited %v", got, sv2.Inherited())
	}
	if !limited(z2, "client") {
		t.Fatal("after the restart the client at its limit was admitted")
	}
}

// TestSaverPrev: a reload's zone takes the counts of the zone it replaces,
// not the file's; a zone released not for good writes nothing; a saver
// without a file only restores.
func TestSaverPrev(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName("z", "", saverRule))
	prev := persistZone(t, "z", saverRule)
	limited(prev, "client")
	limited(prev, "client")
	var log events
	z := persistZone(t, "z", saverRule)
	sv := Start(z, Options{Path: path, Interval: time.Hour, Prev: prev, Log: log.log})
	if got := log.of(Restored); len(got) != 1 || got[0].From != "the zone it replaces" || !sv.Inherited() {
		t.Fatalf("Restored events %+v, inherited %v", got, sv.Inherited())
	}
	if !limited(z, "client") {
		t.Fatal("the new zone admitted the client at its limit in the old one")
	}
	sv.Close(false)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("Close(false) wrote the snapshot: %v", err)
	}

	memory := persistZone(t, "z", saverRule)
	kept := Start(memory, Options{Prev: prev})
	if !kept.Inherited() || !limited(memory, "client") {
		t.Fatal("a saver without a file did not restore from Prev")
	}
	kept.Save()
	kept.Close(true)
}

// TestSaverInterval: the zone is saved every interval while Owns says so.
func TestSaverInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName("z", "", saverRule))
	var owns sync.Mutex
	mine := false
	var log events
	z := persistZone(t, "z", saverRule)
	sv := Start(z, Options{Path: path, Interval: 10 * time.Millisecond, Log: log.log,
		Owns: func(*Saver) bool { owns.Lock(); defer owns.Unlock(); return mine }})
	defer sv.Close(false)
	limited(z, "client")
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("saved while another saver owns the file: %v", err)
	}
	owns.Lock()
	mine = true
	owns.Unlock()
	log.waitFor(t, Saved)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// TestSaverHeld: a file another process holds is neither restored nor
// saved; once its lease is stale the saver takes it over and saves.
func TestSaverHeld(t *testing.T) {
	_, path := saved(t)
	os.WriteFile(path+".lock", []byte("other-host 1\n"), 0o600)
	before, _ := os.ReadFile(path)
	var log events
	z := persistZone(t, "z", ratelimit.Rule{Window: time.Minute, Limit: 5})
	sv := Start(z, Options{Path: path, Interval: time.Second, Log: log.log})
	defer sv.Close(false)
	if len(log.of(Held)) != 1 || len(log.of(Restored)) != 0 || z.Stats().Pending != 0 {
		t.Fatalf("events %+v, pending %d: want Held and nothing restored", log.list, z.Stats().Pending)
	}
	sv.Save()
	if now, _ := os.ReadFile(path); string(now) != string(before) {
		t.Fatal("saved over a snapshot another process holds")
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path+".lock", old, old)
	sv.Save()
	if len(log.of(Acquired)) != 1 || len(log.of(Saved)) != 1 {
		t.Fatalf("events %+v: want Acquired and Saved once the lease is stale", log.list)
	}
}

// TestSaverTakenOver: a file another process took over is no longer
// saved, and let go of.
func TestSaverTakenOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName("z", "", saverRule))
	var log events
	sv := Start(persistZone(t, "z", saverRule), Options{Path: path, Interval: time.Minute, Log: log.log})
	defer sv.Close(false)
	os.WriteFile(path+".lock", []byte("other-host 1\n"), 0o600)
	sv.Save()
	sv.Save()
	if len(log.of(TakenOver)) != 1 || len(log.of(Saved)) != 0 {
		t.Fatalf("events %+v: want one TakenOver, no save", log.list)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a snapshot written after the takeover: %v", err)
	}
}

// TestSaverFailures: the same failure is logged at most once a minute
// (Repeat), every one is reported, and a save that works again says so.
func TestSaverFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName("z", "", saverRule))
	var log events
	sv := Start(persistZone(t, "z", saverRule), Options{Path: path, Interval: time.Minute, Log: log.log})
	defer sv.Close(false)
	os.Chmod(dir, 0o777)
	sv.Save()
	sv.Save()
	os.Chmod(dir, 0o700)
	sv.Save()
	failed := log.of(SaveFailed)
	if len(failed) != 2 || failed[0].Repeat || !failed[1].Repeat {
		t.Fatalf("SaveFailed events %+v: want the second a Repeat", failed)
	}
	if len(log.of(Saved)) != 1 || len(log.of(SavedAgain)) != 1 {
		t.Fatalf("events %+v: want Saved and SavedAgain", log.list)
	}
}

// TestSaverUnusable: a directory group or others may write is refused at
// the start: the zone starts empty and runs on.
func TestSaverUnusable(t *testing.T) {
	dir, path := saved(t)
	os.Chmod(dir, 0o777)
	defer os.Chmod(dir, 0o700)
	var log events
	z := persistZone(t, "z", ratelimit.Rule{Window: time.Minute, Limit: 5})
	sv := Start(z, Options{Path: path, Interval: time.Minute, Log: log.log})
	defer sv.Close(false)
	if len(log.of(Unusable)) != 1 || len(log.of(Restored)) != 0 || z.Stats().Pending != 0 {
		t.Fatalf("events %+v: want Unusable and nothing restored", log.list)
	}
}

// TestSaverResume: a zone that woke keeps its counts: nothing is restored,
// the file is claimed on the saver's goroutine, and saved.
func TestSaverResume(t *testing.T) {
	_, path := saved(t)
	os.WriteFile(path+".lock", []byte("other-host 1\n"), 0o600)
	var log events
	z := persistZone(t, "z", ratelimit.Rule{Window: time.Minute, Limit: 5})
	limited(z, "client")
	sv := Resume(z, Options{Path: path, Interval: time.Minute, Log: log.log})
	log.waitFor(t, Held)
	os.Remove(path + ".lock")
	sv.Close(true)
	if len(log.of(Restored)) != 0 || len(log.of(Acquired)) != 1 {
		t.Fatalf("events %+v: want no restore, Held then Acquired", log.list)
	}
	if got := log.of(Saved); len(got) != 1 || got[0].Keys != 1 {
		t.Fatalf("Saved events %+v, want one of the woken zone's key", got)
	}
}
