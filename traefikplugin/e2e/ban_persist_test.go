//go:build !race

package e2e

import (
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

// TestE2EBanPersist: a ban survives a crash with persist in a real
// Traefik. Limit 3 per 2 s, ban 10 s (room for a slow start on a loaded machine), saved every second: alice is
// banned, two saves of each middleware follow, SIGKILL, a start. Then,
// 3 s after the ban began, /twin (the window alone, restored too) serves
// her, /banned refuses her with Retry-After the ban's remainder, and
// serves her once the ban has ended.
func TestE2EBanPersist(t *testing.T) {
	t.Parallel()                 // it mostly waits for the ban to end
	const ban = 10 * time.Second // the fixture's
	be := e2etest.StartBackend(t)
	snapshots := filepath.Join(t.TempDir(), "snapshots")
	tr := start(t, traefiktest.Options{}, "fixtures/banpersist/dynamic.yml", map[string]any{"Backend": be.URL(), "Dir": snapshots})
	began := banOf(t, tr, "alice", ban)

	// Two saves of each snapshot after the ban: the second began after
	// the first ended, so after the ban.
	stamps := map[string][]time.Time{}
	e2etest.WaitFor(t, 5*time.Second, "two saves of both snapshots after the ban", func() (bool, string) {
		files, _ := filepath.Glob(filepath.Join(snapshots, "*.wlsnap"))
		if len(files) != 2 {
			return false, fmt.Sprintf("snapshots %q, want two", files)
		}
		done := true
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				return false, err.Error()
			}
			s := stamps[f]
			if fi.ModTime().After(began) && (len(s) == 0 || !fi.ModTime().Equal(s[len(s)-1])) {
				stamps[f] = append(s, fi.ModTime())
			}
			done = done && len(stamps[f]) >= 2
		}
		return done, fmt.Sprintf("modification times after the ban: %v", stamps)
	})
	tr.Stop(syscall.SIGKILL)
	tr.Start("/plain")
	restarted := time.Since(began)
	if restarted > 8*time.Second {
		t.Fatalf("Traefik took until %v after the ban to start again: too late to see the ban of 10 s", restarted)
	}

	time.Sleep(time.Until(began.Add(3 * time.Second)))
	expectStatus(t, tr, "/twin", "alice", 200, "after the restart, 3 s or more after the ban, the window alone")
	resp := expectStatus(t, tr, "/banned", "alice", 429, "after the restart, 3 s or more after the ban, banned")
	left := ban - time.Since(began)
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if float64(ra) < left.Seconds()-0.5 || float64(ra) > left.Seconds()+1 {
		t.Fatalf("after the restart: Retry-After %q, want the ban's remainder, %.1f s rounded up", resp.Header.Get("Retry-After"), left.Seconds())
	}
	t.Logf("banned, two saves, SIGKILL, started %.1f s after the ban; %.1f s after it: /twin 200, /banned 429 with Retry-After %d (%.1f s of the ban left)",
		restarted.Seconds(), (ban - left).Seconds(), ra, left.Seconds())
	time.Sleep(time.Until(began.Add(ban + 300*time.Millisecond)))
	expectStatus(t, tr, "/banned", "alice", 200, "after the restart, after the ban's end")
}
