//go:build !race

package e2e

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
)

// persistSite is the site of TestE2EPersist: a zone of limit 5 a minute
// keyed by X-User, persisted every second into Caddy's data directory.
const persistSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
}
:{{.Web}} {
	bind 127.0.0.1
	rate_limit {
		zone login {
			key    {http.request.header.X-User}
			window 1m
			limit  5
		}
		persist {
			interval 1s
		}
	}
	respond "ok"
}
`

// fill sends user's 5 admitted requests.
func fill(t *testing.T, c *caddy, user string) {
	t.Helper()
	for n := 1; n <= 5; n++ {
		if req, resp := e2etest.Get(t, c.url("/"), "X-User", user); resp.Status != 200 {
			t.Fatalf("%s's request %d: %v: %v, want 200", user, n, req, resp)
		}
	}
}

// snapshotsWritten returns the zone's count of snapshots written.
func snapshotsWritten(t *testing.T, c *caddy) float64 {
	t.Helper()
	n, _ := metric(t, c, `caddy_http_rate_limit_snapshots_written_total{zone="login"}`)
	return n
}

// TestE2EPersist checks that counts survive a restart: a graceful one, a
// crash two intervals after the last request, and garbage over the
// snapshot.
func TestE2EPersist(t *testing.T) {
	t.Parallel() // it mostly waits: sub-windows, slow answers, intervals
	c := newCaddy(t)
	c.render(persistSite, nil)
	c.start()

	t.Run("SIGTERM and a start keep the count and its Retry-After", func(t *testing.T) {
		fill(t, c, "alice")
		req, before := e2etest.Get(t, c.url("/"), "X-User", "alice")
		ra1, err := strconv.Atoi(before.Header.Get("Retry-After"))
		if before.Status != 429 || err != nil {
			t.Fatalf("alice's 6th request: %v: %v, want 429 with Retry-After", req, before)
		}
		t0 := time.Now()
		c.stop(syscall.SIGTERM) // Caddy stops gracefully and saves the zone
		c.start()
		req, after := e2etest.Get(t, c.url("/"), "X-User", "alice")
		took := time.Since(t0)
		ra2, _ := strconv.Atoi(after.Header.Get("Retry-After"))
		// Retry-After is whole seconds rounded up: it may fall by the
		// seconds the restart took, and one more for the rounding.
		if after.Status != 429 || ra2 > ra1 || ra1-ra2 > 1+int(took.Seconds()) {
			t.Fatalf("after SIGTERM and a start (%.1fs after the 429 with Retry-After %d): %v: %v, want 429 with Retry-After within 1 s of it",
				took.Seconds(), ra1, req, after)
		}
		if !c.logged("rate_limit zone restored") {
			t.Errorf("no restore logged (want \"rate_limit zone restored\")")
		}
	})

	t.Run("the admin zone view and the metrics show the restore", func(t *testing.T) {
		req, resp := admin(t, c, http.MethodGet, "/rate_limit/")
		var list struct {
			Zones []struct {
				Persist struct {
					File         string `json:"file"`
					RestoredKeys int    `json:"restored_keys"`
				} `json:"persist"`
			} `json:"zones"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &list); err != nil || len(list.Zones) == 0 ||
			list.Zones[0].Persist.RestoredKeys < 1 || list.Zones[0].Persist.File == "" {
			t.Fatalf("%v: %v, want zones[0].persist with restored_keys >= 1 and a file", req, resp)
		}
		if n, _ := metric(t, c, `caddy_http_rate_limit_snapshot_keys_restored_total{zone="login"}`); n < 1 {
			t.Errorf("snapshot_keys_restored_total %v, want >= 1; metrics:\n%s", n, metricLines(t, c, "snapshot"))
		}
		e2etest.WaitFor(t, startTimeout, "a snapshot written (an interval)", func() (bool, string) {
			n := snapshotsWritten(t, c)
			return n >= 1, "snapshots_written_total " + strconv.FormatFloat(n, 'f', -1, 64)
		})
	})

	t.Run("SIGKILL two intervals after the last request keeps the count", func(t *testing.T) {
		fill(t, c, "bob")
		written := snapshotsWritten(t, c)
		e2etest.WaitFor(t, startTimeout, "two snapshots written after bob's 5th request (two intervals)", func() (bool, string) {
			n := snapshotsWritten(t, c)
			return n >= written+2, "snapshots_written_total " + strconv.FormatFloat(n, 'f', -1, 64)
		})
		c.stop(syscall.SIGKILL)
		c.start()
		if req, resp := e2etest.Get(t, c.url("/"), "X-User", "bob"); resp.Status != 429 {
			t.Fatalf("after SIGKILL and a start: %v: %v, want 429", req, resp)
		}
	})

	t.Run("garbage over the snapshot: Caddy starts empty and says why", func(t *testing.T) {
		c.stop(syscall.SIGTERM)
		files, _ := filepath.Glob(filepath.Join(c.Data, "caddy", "rate_limit", "*.wlsnap"))
		if len(files) != 1 {
			t.Fatalf("snapshots in %s: %v, want one", c.Data, files)
		}
		fi, err := os.Stat(files[0])
		if err != nil {
			t.Fatal(err)
		}
		di, err := os.Stat(filepath.Dir(files[0]))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
			t.Errorf("modes %o and %o (%s), want 600 and 700", fi.Mode().Perm(), di.Mode().Perm(), files[0])
		}
		garbage := make([]byte, 3000)
		rand.Read(garbage)
		if err := os.WriteFile(files[0], garbage, 0o600); err != nil {
			t.Fatal(err)
		}
		c.start()
		if req, resp := e2etest.Get(t, c.url("/"), "X-User", "alice"); resp.Status != 200 {
			t.Fatalf("%v: %v, want 200", req, resp)
		}
		if !c.logged("its snapshot could not be restored.*not a windowlimit snapshot") {
			t.Errorf("no log line says why the zone starts empty (want \"its snapshot could not be restored ... not a windowlimit snapshot\")")
		}
	})
}
