package caddymodule

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestMain(m *testing.M) {
	persistByDefault = false // see persistByDefault
	os.Exit(m.Run())
}

func persistConfig(dir, zone string, limit int) string {
	b, _ := json.Marshal(map[string]any{
		"rate_limits": map[string]any{zone: map[string]any{"window": "1m", "limit": limit}},
		"persist":     map[string]any{"directory": dir, "interval": "1s"},
	})
	return string(b)
}

// TestPersistSurvivesRestart: a zone released for good (a stop) is saved,
// and the zone of the next process starts from it; a reload that changes
// the limit keeps the counts too.
func TestPersistSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	h := provisionRaw(t, persistConfig(dir, "login", 5))
	statuses(t, h, 5, "203.0.113.9", "/")
	cleanupHandler(t, h) // a stop: the last user goes

	files, _ := filepath.Glob(filepath.Join(dir, "*.wlsnap"))
	if len(files) != 1 {
		t.Fatalf("snapshot files %v, want one", files)
	}
	st, _ := os.Stat(files[0])
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot mode %v", st.Mode().Perm())
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v", st.Mode().Perm())
	}

	h = provisionRaw(t, persistConfig(dir, "login", 5))
	if got := statuses(t, h, 1, "203.0.113.9", "/"); !slices.Equal(got, []int{429}) {
		t.Fatalf("after the restart: %v, want 429", got)
	}
	if got := statuses(t, h, 1, "203.0.113.10", "/"); !slices.Equal(got, []int{200}) {
		t.Fatalf("another client after the restart: %v, want 200", got)
	}
	info := persistInfoOf(h.zones[0].zone)
	if info == nil || info.RestoredKeys != 1 || info.File != files[0] {
		t.Fatalf("admin view %+v", info)
	}
	// A reload that raises the limit: the counts go along.
	raised := provisionRaw(t, persistConfig(dir, "login", 6))
	cleanupHandler(t, h)
	defer cleanupHandler(t, raised)
	if got := statuses(t, raised, 2, "203.0.113.9", "/"); !slices.Equal(got, []int{200, 429}) {
		t.Fatalf("after raising the limit to 6: %v, want [200 429]", got)
	}
}

// TestPersistBadFileStartsEmpty: garbage over the snapshot is a log line
// and an empty zone, never a failed load.
func TestPersistBadFileStartsEmpty(t *testing.T) {
	dir := t.TempDir()
	h := provisionRaw(t, persistConfig(dir, "g", 2))
	statuses(t, h, 2, "203.0.113.9", "/")
	cleanupHandler(t, h)
	files, _ := filepath.Glob(filepath.Join(dir, "*.wlsnap"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	os.WriteFile(files[0], []byte("garbage, not a snapshot"), 0o600)
	h = provisionRaw(t, persistConfig(dir, "g", 2))
	defer cleanupHandler(t, h)
	if got := statuses(t, h, 1, "203.0.113.9", "/"); !slices.Equal(got, []int{200}) {
		t.Fatalf("after garbage: %v, want 200", got)
	}
}

// TestPersistPlans: every bad value is refused; a Redis zone is not persisted, unless
// on_store_error local makes it a memory zone too.
func TestPersistPlans(t *testing.T) {
	for _, c := range []struct {
		p      *Persist
		memory bool
		want   bool
		err    string
	}{
		{nil, true, false, ""}, // off in this package's tests (persistByDefault)
		{&Persist{}, true, true, ""},
		{nil, false, false, ""},
		{&Persist{}, false, false, "Redis persists"},
		{&Persist{Off: true}, false, false, ""},
		{&Persist{Off: true}, true, false, ""},
		{&Persist{Off: true, Interval: 5e9}, true, false, "off takes no"},
		{&Persist{Directory: "rel/dir"}, true, false, "absolute"},
		{&Persist{Interval: 1e8}, true, false, "too short"},
		{&Persist{Interval: -1}, true, false, "positive"},
	} {
		plan, err := c.p.plan(c.memory)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: err %v, want %q", c.p, err, c.err)
			}
			continue
		}
		if err != nil || (plan != nil) != c.want {
			t.Errorf("%+v memory=%v: plan %+v err %v", c.p, c.memory, plan, err)
		}
	}
}

func TestPersistCaddyfile(t *testing.T) {
	for in, want := range map[string]string{
		"persist off": `"persist":{"off":true}`,
		"persist {\n directory /var/lib/x\n interval 30s\n}": `"persist":{"directory":"/var/lib/x","interval":30000000000}`,
		"persist {\n interval 500ms\n}":                      "too short",
		"persist {\n directory rel\n}":                       "absolute",
		"persist on":                                         "want off or a block",
		"persist {\n dir /x\n}":                              "unknown subdirective",
		"persist {\n interval 2s\n interval 3s\n}":           "duplicate",
	} {
		src := "rate_limit {\n zone a {\n window 1m\n limit 1\n }\n " + in + "\n}"
		h := new(Handler)
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		if err != nil {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q: %v, want %q", in, err, want)
			}
			continue
		}
		b, _ := json.Marshal(h)
		if !strings.Contains(string(b), want) {
			t.Errorf("%q: %s, want %s", in, b, want)
		}
	}
}

// TestPersistUnusedZoneWritesNothing: a zone provisioned and released
// without a request (caddy validate does that) writes no file.
func TestPersistUnusedZoneWritesNothing(t *testing.T) {
	dir := t.TempDir()
	cleanupHandler(t, provisionRaw(t, persistConfig(dir, "unused", 2)))
	if files, _ := filepath.Glob(filepath.Join(dir, "*.wlsnap")); len(files) != 0 {
		t.Fatalf("files %v, want none", files)
	}
}

// TestPersistOffThenStop: a reload that turns persist off keeps the counts
// in memory, and a stop after it writes no snapshot and does not fail.
func TestPersistOffThenStop(t *testing.T) {
	dir := t.TempDir()
	h := provisionRaw(t, persistConfig(dir, "offstop", 3))
	statuses(t, h, 2, "203.0.113.9", "/")
	off := provisionRaw(t, `{"rate_limits":{"offstop":{"window":"1m","limit":3}},"persist":{"off":true}}`)
	cleanupHandler(t, h)
	if got := statuses(t, off, 2, "203.0.113.9", "/"); !slices.Equal(got, []int{200, 429}) {
		t.Fatalf("after persist off: %v, want [200 429]", got)
	}
	cleanupHandler(t, off) // a stop
	if files, _ := filepath.Glob(filepath.Join(dir, "*.wlsnap")); len(files) != 0 {
		t.Fatalf("files %v, want none: persist is off", files)
	}
}
