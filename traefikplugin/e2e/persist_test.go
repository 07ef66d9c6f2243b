//go:build !race

package e2e

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// TestE2EPersist: counts survive a crash. A middleware of limit 5 a
// minute saved every second: 5 requests and a 429, two saves, SIGKILL, a
// start: the next request is 429, its Retry-After no later than before
// and earlier by no more than the time since then, and Traefik's log says
// what was restored; the snapshot is 0600 in a 0700 directory. Garbage
// written over the snapshot: Traefik starts, the route serves 200, and
// the log says why.
func TestE2EPersist(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	snapshots := filepath.Join(t.TempDir(), "snapshots")
	tr := start(t, traefiktest.Options{LogLevel: "DEBUG"}, "fixtures/persist/dynamic.yml", map[string]any{"Backend": be.URL(), "Dir": snapshots})
	url := tr.URL("/login/")

	for n := 1; n <= 5; n++ {
		if req, resp := e2etest.Get(t, url); resp.Status != 200 {
			t.Fatalf("request %d: %v: %v, want 200", n, req, resp)
		}
	}
	req, resp := e2etest.Get(t, url)
	ra1, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.Status != 429 || err != nil {
		t.Fatalf("6th request: %v: %v, want 429 with Retry-After", req, resp)
	}
	t0 := time.Now()
	// Two saves after the 429: the second began after the first ended,
	// so after the five counts.
	var file string
	var stamps []time.Time
	e2etest.WaitFor(t, 5*time.Second, "two saves of the snapshot after the 429", func() (bool, string) {
		files, _ := filepath.Glob(filepath.Join(snapshots, "*.wlsnap"))
		if len(files) != 1 {
			return false, fmt.Sprintf("snapshots %q, want one", files)
		}
		file = files[0]
		fi, err := os.Stat(file)
		if err != nil {
			return false, err.Error()
		}
		if len(stamps) == 0 || !fi.ModTime().Equal(stamps[len(stamps)-1]) {
			stamps = append(stamps, fi.ModTime())
		}
		// The first stamp may be of a save before the 429.
		return len(stamps) >= 3, fmt.Sprintf("%d modification times of %s seen", len(stamps), file)
	})
	tr.Stop(syscall.SIGKILL)
	tr.Start("/plain")
	req, resp = e2etest.Get(t, url)
	took := time.Since(t0)
	ra2, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.Status != 429 {
		t.Fatalf("after SIGKILL two saves after the 5th request: %v: %v, want 429", req, resp)
	}
	if ra1-ra2 > 1+int(took.Seconds()) || ra2 > ra1 {
		t.Fatalf("after the restart: %v: %v: Retry-After %d, before it %d, %.1f s earlier", req, resp, ra2, ra1, took.Seconds())
	}
	restored := `windowlimit: info: middleware "persist-limit@file": restored 1 keys from`
	if !tr.Logged(restored, 2*time.Second) {
		t.Fatalf("Traefik's log does not say %q: %q", restored, tr.LogLines("windowlimit"))
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	di, err := os.Stat(snapshots)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Fatalf("modes %o (%s) and %o (%s), want 600 and 700", fi.Mode().Perm(), file, di.Mode().Perm(), snapshots)
	}
	t.Logf("5 x 200, 429 (Retry-After %d), two saves, SIGKILL, start: 429 (Retry-After %d, %.1f s after the first 429); logged", ra1, ra2, took.Seconds())

	tr.Stop(syscall.SIGTERM)
	garbage := make([]byte, 3000)
	rand.Read(garbage)
	if err := os.WriteFile(file, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	tr.Start("/plain")
	if req, resp := e2etest.Get(t, url); resp.Status != 200 {
		t.Fatalf("after garbage over the snapshot: %v: %v, want 200", req, resp)
	}
	why := `persist-limit@file": starts empty, its snapshot could not be restored: snapshot file .*not a windowlimit snapshot`
	if !tr.Logged(why, 2*time.Second) {
		t.Fatalf("after garbage over the snapshot: no log line matches %q: %q", why, tr.LogLines("windowlimit"))
	}
}
