package yaegitest

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPluginPersist: under yaegi, a middleware with persist saves its
// counts every interval, and the same middleware in a new interpreter (a
// restarted Traefik) starts from them: for every algorithm, the client at
// its limit stays there and another client is admitted. Garbage over the
// files: the new interpreter's middlewares start empty.
func TestPluginPersist(t *testing.T) {
	dir := t.TempDir()
	algorithms := []string{"sliding", "strict", "fixed", "log"}
	config := func(alg string) map[string]any {
		// An hour: fixed's window starts on the clock's hour, and a test
		// that crossed its start would find its count gone.
		return map[string]any{"window": "1h", "limit": "3", "algorithm": alg,
			"persist": map[string]any{"directory": dir, "interval": "1s"}}
	}
	// An interpreter's savers write every interval until its middlewares
	// go: the same names without persist stop them, so that an earlier
	// "Traefik" writes nothing over the files the next one reads, and
	// nothing into the directory once the test removes it.
	stopSavers := func(build func(testing.TB, map[string]any, string) http.Handler) {
		for _, alg := range algorithms {
			build(t, map[string]any{"window": "1h", "limit": "3", "algorithm": alg}, "persist-"+alg+"@file")
		}
		time.Sleep(200 * time.Millisecond) // a save under way ends
	}
	b, _ := loadPlugin(t)
	for _, alg := range algorithms {
		h := b.build(t, config(alg), "persist-"+alg+"@file")
		for i := 0; i < 3; i++ {
			if c := get(h, "203.0.113.7:1", "").Code; c != http.StatusOK {
				t.Fatalf("%s: request %d: %d", alg, i+1, c)
			}
		}
	}
	files := func() []string { f, _ := filepath.Glob(filepath.Join(dir, "*.wlsnap")); return f }
	for deadline := time.Now().Add(10 * time.Second); len(files()) < len(algorithms) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // one more interval: every file holds the counts
	if n := len(files()); n != len(algorithms) {
		t.Fatalf("%d snapshot files, want %d", n, len(algorithms))
	}
	stopSavers(b.build)
	restarted, _ := loadPlugin(t)
	for _, alg := range algorithms {
		h := restarted.build(t, config(alg), "persist-"+alg+"@file")
		if c := get(h, "203.0.113.7:1", "").Code; c != http.StatusTooManyRequests {
			t.Errorf("%s: after the restart the client at its limit got %d, want 429", alg, c)
		}
		if c := get(h, "203.0.113.8:1", "").Code; c != http.StatusOK {
			t.Errorf("%s: after the restart another client got %d, want 200", alg, c)
		}
	}
	stopSavers(restarted.build)
	for _, f := range files() {
		os.WriteFile(f, []byte("garbage"), 0o600)
	}
	again, _ := loadPlugin(t)
	t.Cleanup(func() { stopSavers(again.build) })
	for _, alg := range algorithms {
		h := again.build(t, config(alg), "persist-"+alg+"@file")
		if c := get(h, "203.0.113.7:1", "").Code; c != http.StatusOK {
			t.Errorf("%s: after garbage over the snapshot: %d, want 200", alg, c)
		}
	}
}
