//go:build !windows

package yaegitest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/traefik/yaegi/interp"
)

// persisted is the config of a middleware of limit 3 an hour, saved to
// dir every second.
func persisted(dir string) map[string]any {
	return map[string]any{"window": "1h", "limit": "3",
		"persist": map[string]any{"directory": dir, "interval": "1s"}}
}

// firstSnapshot waits for the first snapshot file in dir, for at most
// ten seconds, and returns it.
func firstSnapshot(t *testing.T, dir string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if f, _ := filepath.Glob(filepath.Join(dir, "*.wlsnap")); len(f) == 1 {
			return f[0]
		}
	}
	t.Fatal("no snapshot file after 10s")
	return ""
}

// TestPluginPersistForeignInstance: under yaegi, a Traefik that finds its
// snapshot held by another (a lease renewed just now by another host)
// says so in one line, restores nothing and writes nothing over it.
func TestPluginPersistForeignInstance(t *testing.T) {
	dir := t.TempDir()
	a, _ := loadPlugin(t)
	h := a.build(t, persisted(dir), "held@file")
	for range 3 {
		get(h, "203.0.113.7:1", "")
	}
	file := firstSnapshot(t, dir)
	time.Sleep(1500 * time.Millisecond) // a save with the three requests
	// A's saver stops: the same name without persist.
	a.build(t, map[string]any{"window": "1h", "limit": "3"}, "held@file")
	time.Sleep(200 * time.Millisecond)
	saved, _ := os.ReadFile(file)

	os.WriteFile(file+".lock", []byte("host-of-a 1\n"), 0o600) // A runs, elsewhere
	logs := &logWriter{}
	b, _ := loadPluginWith(t, interp.Options{Stdout: logs, Stderr: logs})
	hb := b.build(t, persisted(dir), "held@file")
	if c := get(hb, "203.0.113.7:1", "").Code; c != http.StatusOK {
		t.Errorf("B took A's counts: %d, want 200", c)
	}
	time.Sleep(1500 * time.Millisecond) // an interval: B would save now
	b.build(t, map[string]any{"window": "1h", "limit": "3"}, "held@file")
	time.Sleep(200 * time.Millisecond)
	if now, _ := os.ReadFile(file); string(now) != string(saved) {
		t.Error("B wrote over A's snapshot")
	}
	if text := logs.text(t); strings.Count(text, "is held by another process") != 1 {
		t.Errorf("want one line saying the snapshot is held, got:\n%s", text)
	}
}

// TestPluginPersistRemoved: a reload that removes persist keeps the
// middleware's counts in memory.
func TestPluginPersistRemoved(t *testing.T) {
	dir := t.TempDir()
	b, _ := loadPlugin(t)
	h := b.build(t, persisted(dir), "removed@file")
	get(h, "203.0.113.7:1", "")
	get(h, "203.0.113.7:1", "")
	h = b.build(t, map[string]any{"window": "1h", "limit": "3"}, "removed@file")
	if c := get(h, "203.0.113.7:1", "").Code; c != http.StatusOK {
		t.Fatalf("third request after persist was removed: %d, want 200", c)
	}
	if c := get(h, "203.0.113.7:1", "").Code; c != http.StatusTooManyRequests {
		t.Errorf("fourth request after persist was removed: %d, want 429 (the counts kept)", c)
	}
}

// TestPluginPersistFIFO: a FIFO at the snapshot path does not stop
// Traefik's configuration: New returns, and the middleware serves.
func TestPluginPersistFIFO(t *testing.T) {
	dir := t.TempDir()
	b, _ := loadPlugin(t)
	h := b.build(t, persisted(dir), "fifo@file")
	get(h, "203.0.113.7:1", "")
	file := firstSnapshot(t, dir)
	b.build(t, map[string]any{"window": "1h", "limit": "3"}, "fifo@file") // the saver stops
	time.Sleep(200 * time.Millisecond)
	os.Remove(file)
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	again, _ := loadPlugin(t) // a restarted Traefik
	done := make(chan http.Handler, 1)
	go func() { done <- again.build(t, persisted(dir), "fifo@file") }()
	select {
	case h := <-done:
		if c := get(h, "203.0.113.7:1", "").Code; c != http.StatusOK {
			t.Errorf("after a FIFO: %d, want 200", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("New still blocked on a FIFO at the snapshot path after 30s")
	}
	again.build(t, map[string]any{"window": "1h", "limit": "3"}, "fifo@file")
}
