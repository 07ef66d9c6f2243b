package traefikplugin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func persistedConfig(dir string) *Config {
	return &Config{Window: "1m", Limit: 5, Persist: &PersistConfig{Directory: dir, Interval: "1s"}}
}

// TestPersistRestart: a middleware with persist saves its counts, and the
// zone of the next process (here: the registry forgotten) starts from
// them; garbage over the file is a log line and an empty zone.
func TestPersistRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snaps")
	const name = "persist@file"
	h := newMiddleware(t, persistedConfig(dir), name)
	for i := 0; i < 5; i++ {
		if w := serve(h, "203.0.113.7:4711", nil); w.Code != 200 {
			t.Fatalf("request %d: %d", i+1, w.Code)
		}
	}
	registryMu.Lock()
	sv := registry[name].saver
	registryMu.Unlock()
	sv.Save()
	files, _ := filepath.Glob(filepath.Join(dir, "*.wlsnap"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	forget(name) // a restart: the next New makes a new zone

	h2, err := newChecked(context.Background(), okHandler, persistedConfig(dir), name)
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(h2, "203.0.113.7:4711", nil); w.Code != 429 {
		t.Fatalf("after the restart: %d, want 429", w.Code)
	}
	if w := serve(h2, "203.0.113.8:4711", nil); w.Code != 200 {
		t.Fatalf("another client after the restart: %d, want 200", w.Code)
	}
	forget(name)

	os.WriteFile(files[0], []byte("garbage"), 0o600)
	var logged strings.Builder
	old := persistLog
	persistLog = &logged
	defer func() { persistLog = old }()
	h3 := newMiddleware(t, persistedConfig(dir), name)
	if w := serve(h3, "203.0.113.7:4711", nil); w.Code != 200 {
		t.Fatalf("after garbage: %d, want 200", w.Code)
	}
	if !strings.Contains(logged.String(), "could not be restored: snapshot file") {
		t.Fatalf("log: %q", logged.String())
	}
}

func TestPersistConfigErrors(t *testing.T) {
	for _, c := range []struct {
		p    *PersistConfig
		want string
	}{
		{&PersistConfig{Directory: "rel"}, "absolute"},
		{&PersistConfig{Directory: "/x", Interval: "100ms"}, "at least 1s"},
		{&PersistConfig{Directory: "/x", Interval: "soon"}, "persist.interval"},
		{&PersistConfig{Interval: "5s"}, "persist.directory"},
	} {
		cfg := &Config{Window: "1m", Limit: 5, Persist: c.p}
		if _, err := newChecked(context.Background(), okHandler, cfg, "bad"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
	cfg := &Config{Window: "1m", Limit: 5, Persist: &PersistConfig{Directory: "/x"}, Redis: &RedisConfig{Endpoints: []string{"127.0.0.1:1"}}}
	if _, err := newChecked(context.Background(), okHandler, cfg, "bad"); err == nil || !strings.Contains(err.Error(), "Redis persists") {
		t.Errorf("persist with redis: %v", err)
	}
	forget("bad")
}

// TestPersistIdleLeavesSaved: a persisted middleware that goes idle and
// leaves the registry writes its snapshot once more, and stops saving.
func TestPersistIdleLeavesSaved(t *testing.T) {
	minimum := idleMinimum
	idleMinimum = 300 * time.Millisecond
	t.Cleanup(func() { idleMinimum = minimum })
	dir := t.TempDir()
	const name = "idle-persist@file"
	cfg := &Config{Window: "1s", Limit: 5, Persist: &PersistConfig{Directory: dir, Interval: "1h"}}
	h := newMiddleware(t, cfg, name)
	serve(h, "203.0.113.7:4711", nil)
	for deadline := time.Now().Add(15 * time.Second); registeredZone(name) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if registeredZone(name) {
		t.Fatal("the idle middleware never left the registry")
	}
	var files []string
	for deadline := time.Now().Add(5 * time.Second); len(files) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		files, _ = filepath.Glob(filepath.Join(dir, "*.wlsnap"))
	}
	if len(files) != 1 {
		t.Fatalf("files %v: no snapshot when the middleware left the registry (the interval is an hour)", files)
	}
}
