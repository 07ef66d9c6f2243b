//go:build !race

package e2e

import (
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// TestE2EInFlight: inFlight 3 through a real Traefik: 12 clients on one
// key leave 3 at a slow service at most, through one instance in memory
// and through two instances on one Redis; an instance killed while it
// holds 3 slots leaves the key refused by the other until the slots'
// TTL has passed, then served.
func TestE2EInFlight(t *testing.T) {
	t.Run("memory, one instance", func(t *testing.T) {
		svc := e2etest.StartSlowBackend(t, 200*time.Millisecond)
		tr := start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", map[string]any{"Backend": svc.URL(), "Redis": "", "Limit": 0})
		ok, refused := e2etest.SlotBurst(t, "a", 12, 4, tr.URL("/slots"))
		if _, got := svc.Stats("a"); got != 3 {
			t.Fatalf("the service held %d of the key at once, want exactly 3 (%d served, %d refused)", got, ok, refused)
		}
		t.Logf("48 requests: %d served, %d refused; the service held 3 at most", ok, refused)
	})
	t.Run("redis, two instances", func(t *testing.T) {
		rds := redistest.Start(t)
		svc := e2etest.StartSlowBackend(t, 200*time.Millisecond)
		data := map[string]any{"Backend": svc.URL(), "Redis": rds.Addr(), "TTL": "5s", "Limit": 0}
		a, b := start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", data), start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", data)
		ok, refused := e2etest.SlotBurst(t, "shared", 12, 4, a.URL("/slots"), b.URL("/slots"))
		if _, got := svc.Stats("shared"); got != 3 {
			t.Fatalf("the service held %d of the key at once through two instances, want exactly 3 (%d served, %d refused)", got, ok, refused)
		}
		t.Logf("48 requests over two instances: %d served, %d refused; the service held 3 at most", ok, refused)
	})
	t.Run("redis, beside a rate of 5 a minute, two instances: 3 at the service at most, 5 served, 5 counted", func(t *testing.T) {
		rds := redistest.Start(t)
		svc := e2etest.StartSlowBackend(t, 100*time.Millisecond)
		data := map[string]any{"Backend": svc.URL(), "Redis": rds.Addr(), "TTL": "5s", "Limit": 5}
		a, b := start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", data), start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", data)
		// 12 clients send for 1.5s, each again 20ms after a refusal: the
		// slots refuse most while three are held, the rate the rest once
		// five were served.
		served, bySlot, byRate := e2etest.SlotAndRateBurst(t, "mixed", 12, 1500*time.Millisecond, "3", "5", a.URL("/slots"), b.URL("/slots"))
		if _, most := svc.Stats("mixed"); most > 3 {
			t.Fatalf("the service held %d of the key at once through two instances, want at most 3", most)
		}
		if served != 5 || bySlot == 0 || byRate == 0 {
			t.Fatalf("%d served, %d refused a slot, %d refused by the rate: want 5 served and both refusals", served, bySlot, byRate)
		}
		if n := rds.StoredCount(t, "inflight:slots@file:{mixed}"); n != 5 {
			t.Fatalf("Redis counts %d requests of the key, want the 5 served: a request refused a slot counts nothing", n)
		}
		t.Logf("%d served, %d refused a slot, %d refused by the rate; Redis counts 5", served, bySlot, byRate)
	})
	t.Run("redis, an instance killed holding 3 slots: the other refuses the key until the TTL, then serves", func(t *testing.T) {
		rds := redistest.Start(t)
		svc := e2etest.StartSlowBackend(t, 0) // holds every request until free
		data := map[string]any{"Backend": svc.URL(), "Redis": rds.Addr(), "TTL": "2s", "Limit": 0}
		a, b := start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", data), start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", data)
		for i := 0; i < 3; i++ {
			go func() {
				req, _ := http.NewRequest(http.MethodGet, a.URL("/slots"), nil)
				req.Header.Set("X-Key", "crash")
				if resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req); err == nil {
					resp.Body.Close()
				}
			}()
		}
		e2etest.WaitFor(t, 5*time.Second, "3 requests of the key held at the service through instance a", func() (bool, string) {
			now, _ := svc.Stats("crash")
			return now == 3, strconv.Itoa(now) + " held"
		})
		held := e2etest.Request{URL: b.URL("/slots"), Header: []string{"X-Key", "crash"}, Timeout: 2 * time.Second}
		if resp, err := e2etest.Send(held); err != nil || resp.Status != 429 {
			t.Fatalf("instance b while a holds the key's 3 slots: %v: %v (error %v), want 429", held, resp, err)
		}
		a.Stop(syscall.SIGKILL)
		killed := time.Now()
		svc.Free() // the service holds nothing now; only the dead instance's slots remain
		var served time.Duration
		var refused int
		e2etest.WaitFor(t, 6*time.Second, "instance b to serve the key again", func() (bool, string) {
			req, resp := e2etest.Get(t, b.URL("/slots"), "X-Key", "crash")
			switch resp.Status {
			case 200:
				served = time.Since(killed)
				return true, ""
			case 429:
				refused++
			default:
				t.Errorf("instance b after a was killed: %v: %v, want 429 or 200", req, resp)
			}
			return false, req.String() + ": " + resp.String()
		})
		if served < 1500*time.Millisecond || refused == 0 {
			t.Fatalf("instance b served the key %v after its holder was killed (%d refusals before), before the slots' TTL of 2s could pass (renewed every 2s/3)", served, refused)
		}
		t.Logf("instance b refused the key %d times, then served it %v after its holder was killed (inFlightTTL 2s)", refused, served.Round(10*time.Millisecond))
	})
}
