//go:build !race

package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/redistest"
)

// inflightSite proxies / to a backend, at most 3 requests of an X-Key at
// once (in memory, or in one Redis for every instance, TTL 2s), and with
// .Limit set at most that many a minute.
const inflightSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
}
:{{.Web}} {
	bind 127.0.0.1
	rate_limit {
		zone slots {
			key {http.request.header.X-Key}
			in_flight 3
			{{- if .Redis}}
			in_flight_ttl 2s
			{{- end}}
			{{- if .Limit}}
			window 1m
			limit {{.Limit}}
			{{- end}}
		}
		{{- if .Redis}}
		store redis {
			address {{.Redis}}
			key_prefix inflight:
		}
		{{- end}}
	}
	reverse_proxy {{.Backend}}
}
`

// TestE2EInFlight: in_flight 3 through a real Caddy, in memory and across
// two instances on one Redis; a killed instance's slots, and clients that
// give up.
func TestE2EInFlight(t *testing.T) {
	t.Run("memory: 12 clients on one key, 3 at the backend at most, another key unaffected", func(t *testing.T) {
		b := e2etest.StartSlowBackend(t, 200*time.Millisecond)
		c := newCaddy(t)
		c.render(inflightSite, map[string]any{"Redis": "", "Backend": b.Addr, "Limit": 0})
		c.start()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 5; i++ {
				if req, resp := e2etest.Get(t, c.url("/"), "X-Key", "other"); resp.Status != 200 {
					t.Errorf("another key, one at a time: %v -> %v", req, resp)
				}
			}
		}()
		ok, refused := e2etest.SlotBurst(t, "a", 12, 4, c.url("/"))
		<-done
		if _, most := b.Stats("a"); most != 3 {
			t.Fatalf("the backend held %d of key a at once, want exactly 3 (%d served, %d refused)", most, ok, refused)
		}
		t.Logf("48 requests: %d served, %d refused; backend held 3 at most", ok, refused)
	})

	rds := redistest.Start(t)
	t.Run("redis: two instances, 3 at the backend at most across both", func(t *testing.T) {
		b := e2etest.StartSlowBackend(t, 200*time.Millisecond)
		x, y := newCaddy(t), newCaddy(t)
		for _, c := range []*caddy{x, y} {
			c.render(inflightSite, map[string]any{"Redis": rds.Addr(), "Backend": b.Addr, "Limit": 0})
			c.start()
		}
		ok, refused := e2etest.SlotBurst(t, "shared", 12, 4, x.url("/"), y.url("/"))
		if _, most := b.Stats("shared"); most != 3 {
			t.Fatalf("the backend held %d of the key at once through two instances, want exactly 3 (%d served, %d refused)", most, ok, refused)
		}
		t.Logf("48 requests over two instances: %d served, %d refused; backend held 3 at most", ok, refused)
	})

	t.Run("redis: beside a rate of 5 a minute, two instances: 3 at the backend at most, 5 served, 5 counted", func(t *testing.T) {
		b := e2etest.StartSlowBackend(t, 100*time.Millisecond)
		x, y := newCaddy(t), newCaddy(t)
		for _, c := range []*caddy{x, y} {
			c.render(inflightSite, map[string]any{"Redis": rds.Addr(), "Backend": b.Addr, "Limit": 5})
			c.start()
		}
		// 12 clients send for 1.5s, each again 20ms after a refusal: the
		// slots refuse most while three are held, the rate the rest once
		// five were served.
		served, bySlot, byRate := e2etest.SlotAndRateBurst(t, "mixed", 12, 1500*time.Millisecond, "3", "5", x.url("/"), y.url("/"))
		if _, most := b.Stats("mixed"); most > 3 {
			t.Fatalf("the backend held %d of the key at once through two instances, want at most 3", most)
		}
		if served != 5 || bySlot == 0 || byRate == 0 {
			t.Fatalf("%d served, %d refused a slot, %d refused by the rate: want 5 served and both refusals", served, bySlot, byRate)
		}
		if n := rds.StoredCount(t, "inflight:slots:{mixed}"); n != 5 {
			t.Fatalf("Redis counts %d requests of the key, want the 5 served: a request refused a slot counts nothing", n)
		}
		t.Logf("%d served, %d refused a slot, %d refused by the rate; Redis counts 5", served, bySlot, byRate)
	})

	t.Run("redis: an instance killed holding 3 slots: the other refuses the key until the TTL, then serves", func(t *testing.T) {
		b := e2etest.StartSlowBackend(t, 0)
		x, y := newCaddy(t), newCaddy(t)
		for _, c := range []*caddy{x, y} {
			c.render(inflightSite, map[string]any{"Redis": rds.Addr(), "Backend": b.Addr, "Limit": 0})
			c.start()
		}
		for i := 0; i < 3; i++ {
			go func() {
				req, _ := http.NewRequest(http.MethodGet, x.url("/"), nil)
				req.Header.Set("X-Key", "crash")
				if resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req); err == nil {
					resp.Body.Close()
				}
			}()
		}
		e2etest.WaitFor(t, startTimeout, "3 requests of the key held at the backend", func() (bool, string) {
			now, _ := b.Stats("crash")
			return now == 3, strconv.Itoa(now) + " held"
		})
		x.stop(syscall.SIGKILL)
		killed := time.Now()
		b.Free() // the backend is free; only the dead instance's slots remain
		var served time.Duration
		e2etest.WaitFor(t, 6*time.Second, "the key to be served again", func() (bool, string) {
			_, resp := e2etest.Get(t, y.url("/"), "X-Key", "crash")
			if resp.Status == 200 {
				served = time.Since(killed)
				return true, ""
			}
			return false, resp.String()
		})
		if served < 1500*time.Millisecond {
			t.Fatalf("served %v after the holder was killed, before its slots' TTL of 2s could pass (renewed every 2s/3)", served)
		}
		t.Logf("the key was served %v after its holder was killed (in_flight_ttl 2s)", served.Round(10*time.Millisecond))
	})

	t.Run("clients that give up free their slots at once", func(t *testing.T) {
		b := e2etest.StartSlowBackend(t, 0)
		for _, store := range []string{"", rds.Addr()} {
			c := newCaddy(t)
			c.render(inflightSite, map[string]any{"Redis": store, "Backend": b.Addr, "Limit": 0})
			c.start()
			var wg sync.WaitGroup
			key := "quit" + strconv.Itoa(len(store))
			for i := 0; i < 3; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
					defer cancel()
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url("/"), nil)
					req.Header.Set("X-Key", key)
					if resp, err := http.DefaultClient.Do(req); err == nil {
						resp.Body.Close()
					}
				}()
			}
			wg.Wait()
			gaveUp := time.Now()
			e2etest.WaitFor(t, time.Second, "the slots of the clients that gave up to be free", func() (bool, string) {
				// The backend sees a request end a little after Caddy
				// does (the proxied connection closes): a request sent
				// before then would be a fifth at the backend for a few
				// milliseconds, though Caddy freed the slot in order.
				if now, _ := b.Stats(key); now > 0 {
					return false, "the backend still holds " + strconv.Itoa(now)
				}
				// The backend hangs: a request admitted now is the
				// proof; it gives up in turn.
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url("/"), nil)
				req.Header.Set("X-Key", key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return true, "" // admitted: it waited at the backend
				}
				defer resp.Body.Close()
				return false, resp.Status
			})
			t.Logf("store %q: a new request admitted %v after 3 clients gave up", map[bool]string{true: "memory", false: "redis"}[store == ""], time.Since(gaveUp).Round(time.Millisecond))
			if now, most := b.Stats(key); most > 3 {
				t.Fatalf("the backend held %d (now %d), want at most 3", most, now)
			}
		}
	})
}

// inflightAttackSite speaks h1 and h2c; /ip/ holds 3 of a client IP at
// once, /key/ 2 of an X-Key, max_keys 50.
const inflightAttackSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
	servers {
		protocols h1 h2c
	}
}
:{{.Web}} {
	bind 127.0.0.1
	handle /ip/* {
		rate_limit {
			zone by_ip {
				in_flight 3
			}
			{{- if .Redis}}
			store redis {
				address {{.Redis}}
				key_prefix attack:
			}
			{{- end}}
		}
		reverse_proxy {{.Backend}}
	}
	handle /key/* {
		rate_limit {
			zone by_key {
				key {http.request.header.X-Key}
				in_flight 2
			}
			max_keys 50
		}
		reverse_proxy {{.Backend}}
	}
}
`

// TestE2EInFlightAttacks: 200 requests at once as h2c streams of one
// connection, streams reset as their answers come, and a flood of fresh
// keys past max_keys: never more than n of a key at the backend, and no
// slot left once they end.
func TestE2EInFlightAttacks(t *testing.T) {
	rds := redistest.Start(t)
	attack := e2etest.Program(t, "attack")
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			b := e2etest.StartSlowBackend(t, 300*time.Millisecond)
			c := newCaddy(t)
			vars := map[string]any{"Backend": b.Addr, "Redis": ""}
			if store == "redis" {
				vars["Redis"] = rds.Addr()
			}
			c.render(inflightAttackSite, vars)
			c.start()
			for _, a := range []struct{ from, mode, n string }{
				{"127.0.3.1", "h2concurrent", "200"},
				{"127.0.3.2", "h2reset", "10"},
				{"127.0.3.3", "concurrent", "200"},
			} {
				args := []string{"-mode", a.mode, "-n", a.n, "-from", a.from, "-url", c.url("/ip/x")}
				lines, stderr := e2etest.Run(t, attack, time.Minute, args...)
				_, most := b.Stats(a.from)
				if most > 3 || most == 0 {
					t.Errorf("attack %s: the backend held %d of the client at once, want 1 to 3; %s; %s", strings.Join(args, " "), most, e2etest.Tally(lines), stderr)
					continue
				}
				t.Logf("attack %s: the backend held %d at most; the client saw %s", strings.Join(args, " "), most, e2etest.Tally(lines))
			}
			if store == "memory" {
				var wg sync.WaitGroup
				for i := 0; i < 150; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						e2etest.Get(t, c.url("/key/x"), "X-Key", "fresh"+strconv.Itoa(i%75))
					}()
				}
				wg.Wait()
				for i := 0; i < 75; i++ {
					if _, most := b.Stats("fresh" + strconv.Itoa(i)); most > 2 {
						t.Errorf("fresh key %d: %d at the backend at once, want at most 2", i, most)
					}
				}
			}
			e2etest.WaitFor(t, startTimeout, "every slot to be free", func() (bool, string) {
				lines := metricLines(t, c, "caddy_http_rate_limit_in_flight{")
				for _, l := range strings.Split(lines, "\n") {
					if l != "" && !strings.HasSuffix(l, " 0") {
						return false, lines
					}
				}
				return true, ""
			})
		})
	}
}
