//go:build !race

package e2e

import (
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// expectStatus sends a GET of path as user to tr and fails unless it gets
// status; it returns the response.
func expectStatus(t *testing.T, tr *traefiktest.Traefik, path, user string, status int, why string) e2etest.Response {
	t.Helper()
	req, resp := e2etest.Get(t, tr.URL(path), "X-User", user)
	if resp.Status != status {
		t.Fatalf("%s: %v: %v, want %d", why, req, resp, status)
	}
	return resp
}

// banOf starts the ban of user through tr: 3 x 200 on /banned and on
// /twin, then 429 with Retry-After the ban's seconds on /banned. It
// returns when.
func banOf(t *testing.T, tr *traefiktest.Traefik, user string, ban time.Duration) time.Time {
	t.Helper()
	for n := 1; n <= 3; n++ {
		expectStatus(t, tr, "/banned", user, 200, "request "+strconv.Itoa(n))
		expectStatus(t, tr, "/twin", user, 200, "request "+strconv.Itoa(n)+" without a ban")
	}
	at := time.Now()
	want := strconv.Itoa(int(ban / time.Second))
	if resp := expectStatus(t, tr, "/banned", user, 429, "the 4th request"); resp.Header.Get("Retry-After") != want {
		t.Fatalf("the 4th request: Retry-After %q, want the ban's %s", resp.Header.Get("Retry-After"), want)
	}
	return at
}

// TestE2EBan runs the case through a real Traefik: limit 3 per
// 2 s, ban 6 s. In memory: refused 3 s later, where the window alone
// admits (/twin), with Retry-After the ban's end; served after 6 s. With
// Redis, two instances: a ban set through one is honoured by the other.
func TestE2EBan(t *testing.T) {
	t.Parallel() // it mostly waits for the ban to end
	be := e2etest.StartBackend(t)

	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		tr := start(t, traefiktest.Options{}, "fixtures/ban/dynamic.yml", map[string]any{"Backend": be.URL(), "Redis": ""})
		began := banOf(t, tr, "alice", 6*time.Second)
		time.Sleep(time.Until(began.Add(3 * time.Second)))
		expectStatus(t, tr, "/twin", "alice", 200, "3 s on, the window alone")
		resp := expectStatus(t, tr, "/banned", "alice", 429, "3 s on, banned")
		if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 1 || ra > 3 {
			t.Fatalf("3 s on: Retry-After %q, want the ban's end, 3 s or less", resp.Header.Get("Retry-After"))
		}
		time.Sleep(time.Until(began.Add(6*time.Second + 300*time.Millisecond)))
		expectStatus(t, tr, "/banned", "alice", 200, "after the ban's end")
	})

	t.Run("redis, two instances", func(t *testing.T) {
		t.Parallel()
		rds := redistest.Start(t)
		data := map[string]any{"Backend": be.URL(), "Redis": rds.Addr()}
		a, b := twoInstances(t, "fixtures/ban/dynamic.yml", data)
		began := banOf(t, a, "alice", 6*time.Second)
		if ks := rds.Keys(t, "*login-limit@file:{alice}:ban"); len(ks) != 1 {
			t.Fatalf("redis keys %v, want the ban key ...login-limit@file:{alice}:ban", ks)
		}
		time.Sleep(time.Until(began.Add(3 * time.Second)))
		expectStatus(t, b, "/twin", "alice", 200, "3 s on, the window alone, instance b")
		expectStatus(t, b, "/banned", "alice", 429, "3 s on, instance b honours a's ban")
		time.Sleep(time.Until(began.Add(6*time.Second + 300*time.Millisecond)))
		expectStatus(t, b, "/banned", "alice", 200, "instance b, after the ban's end")
	})
}
