//go:build !race

package e2e

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// TestE2EInFlightAttacks runs scripts/e2e/attack's attacks, each from
// its own loopback address, on a route of inFlight 3 by client address
// behind a real Traefik, in memory and in Redis: 200 requests at once as
// h2c streams of one connection, 10 streams reset as their answers come,
// 200 requests at once each on its own connection. The backend, holding
// each request 300 ms, never holds more than 3 of the client at once;
// afterwards 3 requests of the client at once are all served, so no slot
// was left taken.
func TestE2EInFlightAttacks(t *testing.T) {
	t.Parallel()
	svc := e2etest.StartSlowBackend(t, 300*time.Millisecond)
	rds := redistest.Start(t)
	tr := start(t, traefiktest.Options{}, "fixtures/inflightattack/dynamic.yml", map[string]any{"Backend": svc.URL(), "Redis": rds.Addr()})
	attack := e2etest.Program(t, "attack")

	for _, store := range []struct{ name, path, net string }{
		{"memory", "/mem/x", "127.0.4"},
		{"redis", "/redis/x", "127.0.5"},
	} {
		for _, a := range []struct{ from, mode, n string }{
			{".1", "h2concurrent", "200"},
			{".2", "h2reset", "10"},
			{".3", "concurrent", "200"},
		} {
			t.Run(store.name+"/"+a.mode, func(t *testing.T) {
				from := store.net + a.from
				args := []string{"-mode", a.mode, "-n", a.n, "-from", from, "-url", tr.URL(store.path)}
				sent := "attack " + strings.Join(args, " ")
				lines, stderr := e2etest.Run(t, attack, time.Minute, args...)
				if _, most := svc.Stats(from); most > 3 || most == 0 {
					t.Fatalf("%s: the backend held %d of the client at once, want 1 to 3; the client saw %s; %s", sent, most, e2etest.Tally(lines), stderr)
				}
				_, most := svc.Stats(from)
				t.Logf("%s: the backend held %d at most; the client saw %s", sent, most, e2etest.Tally(lines))
				e2etest.WaitFor(t, 3*time.Second, "3 requests of the client at once, all served", func() (bool, string) {
					return allServed(e2etest.Request{URL: tr.URL(store.path), From: from}, 3)
				})
			})
		}
	}
}

// allServed sends n copies of r at once and reports whether every one got
// 200, and if not, what came back.
func allServed(r e2etest.Request, n int) (bool, string) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var got []string
	ok := true
	for range n {
		wg.Go(func() {
			resp, err := e2etest.Send(r)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				got = append(got, err.Error())
				ok = false
				return
			}
			got = append(got, resp.String())
			ok = ok && resp.Status == 200
		})
	}
	wg.Wait()
	return ok, r.String() + " x " + strconv.Itoa(n) + " at once: " + strings.Join(got, "; ")
}
