package ratelimit

import (
	"testing"
	"time"
)

// Every setting that shapes a zone's state changes its ID; the callbacks
// and the clock, which do not, leave it alone.
func TestZoneID(t *testing.T) {
	rule := Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 10, Cost: 1}
	opts := Options{MaxKeys: 100, SweepInterval: time.Second}
	base := ZoneID("api", rule, opts)
	if got := ZoneID("api", rule, Options{MaxKeys: 100, SweepInterval: time.Second, Now: time.Now, Evicting: func(uint64) {}, EvictingEvery: time.Hour}); got != base {
		t.Errorf("callbacks changed the ID: %q, want %q", got, base)
	}
	changes := map[string]func(r *Rule, o *Options, name *string){
		"name":           func(r *Rule, o *Options, name *string) { *name = "api2" },
		"window":         func(r *Rule, o *Options, name *string) { r.Window = 2 * time.Minute },
		"sub-window":     func(r *Rule, o *Options, name *string) { r.SubWindow = 3 * time.Second },
		"limit":          func(r *Rule, o *Options, name *string) { r.Limit = 11 },
		"cost":           func(r *Rule, o *Options, name *string) { r.Cost = 2 },
		"algorithm":      func(r *Rule, o *Options, name *string) { r.Algorithm = Strict },
		"max keys":       func(r *Rule, o *Options, name *string) { o.MaxKeys = 101 },
		"sweep interval": func(r *Rule, o *Options, name *string) { o.SweepInterval = 2 * time.Second },
	}
	seen := map[string]string{base: "base"}
	for what, change := range changes {
		r, o, name := rule, opts, "api"
		change(&r, &o, &name)
		id := ZoneID(name, r, o)
		if prev, dup := seen[id]; dup {
			t.Errorf("changing the %s gives the ID of %s: %q", what, prev, id)
		}
		seen[id] = what
	}
	// A name that holds what follows it cannot pass for another zone.
	if ZoneID(`a" window=1`, rule, opts) == ZoneID("a", rule, opts) {
		t.Error("a quoted name collides")
	}
}

// A default written out and one left implicit give one ID, for the
// options as for the rule: writing max_keys 100000 (the default) must not
// throw away every count at the next reload.
func TestZoneIDDefaultOptions(t *testing.T) {
	rule := Rule{Window: time.Minute, Limit: 10}
	if err := rule.Normalize(); err != nil {
		t.Fatal(err)
	}
	if a, b := ZoneID("api", rule, Options{}), ZoneID("api", rule, Options{MaxKeys: DefaultMaxKeys}); a != b {
		t.Errorf("max keys: implicit %q, written out %q", a, b)
	}
	if a, b := ZoneID("api", rule, Options{}), ZoneID("api", rule, Options{SweepInterval: time.Minute}); a != b {
		t.Errorf("sweep interval: implicit %q, written out %q", a, b)
	}
}
