//go:build !race

package e2e

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// inflightSite proxies / to a backend, at most 3 requests of an X-Key at
// once (in memory, or in one Redis for every instance, TTL 2s).
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

// slowBackend records, per X-Key, how many requests it holds at once and
// the most it ever held. A request is held for delay, or until its
// client is gone, or, when hang is set, until release is closed.
type slowBackend struct {
	delay   time.Duration
	mu      sync.Mutex
	now     map[string]int
	most    map[string]int
	hang    bool
	release chan struct{}
	addr    string
}

func startSlowBackend(t *testing.T, delay time.Duration, hang bool) *slowBackend {
	t.Helper()
	b := &slowBackend{delay: delay, now: map[string]int{}, most: map[string]int{}, hang: hang, release: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: b}
	go srv.Serve(l)
	t.Cleanup(func() {
		b.free()
		srv.Close()
	})
	b.addr = l.Addr().String()
	return b
}

func (b *slowBackend) free() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.release:
	default:
		close(b.release)
	}
}

func (b *slowBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := r.Header.Get("X-Key")
	if k == "" {
		k = r.Header.Get("X-Forwarded-For") // the client's address, as Caddy saw it
	}
	b.mu.Lock()
	b.now[k]++
	b.most[k] = max(b.most[k], b.now[k])
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.now[k]--
		b.mu.Unlock()
	}()
	var wait <-chan time.Time
	if !b.hang {
		wait = time.After(b.delay)
	}
	select {
	case <-wait:
	case <-b.release:
	case <-r.Context().Done():
	}
	w.Write([]byte("ok"))
}

func (b *slowBackend) stats(k string) (now, most int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now[k], b.most[k]
}

// slotBurst sends clients x each requests of key, spread over urls, at once,
// and returns how many got 200 and 429.
func slotBurst(t *testing.T, urls []string, key string, clients, each int) (ok, refused int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, resp := get(t, urls[(c+i)%len(urls)], "X-Key", key)
				mu.Lock()
				switch resp.Status {
				case 200:
					ok++
				case 429:
					refused++
					if resp.Header.Get("Retry-After") != "1" {
						t.Errorf("429 with Retry-After %q, want 1", resp.Header.Get("Retry-After"))
					}
				default:
					t.Errorf("%s: %v", key, resp)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ok, refused
}

// TestE2EInFlight: in_flight 3 through a real Caddy, in memory and across
// two instances on one Redis; a killed instance's slots, and clients that
// give up.
func TestE2EInFlight(t *testing.T) {
	t.Run("memory: 12 clients on one key, 3 at the backend at most, another key unaffected", func(t *testing.T) {
		b := startSlowBackend(t, 200*time.Millisecond, false)
		c := newCaddy(t)
		c.render(inflightSite, map[string]any{"Redis": "", "Backend": b.addr})
		c.start()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 5; i++ {
				if req, resp := get(t, c.url("/"), "X-Key", "other"); resp.Status != 200 {
					t.Errorf("another key, one at a time: %v -> %v", req, resp)
				}
			}
		}()
		ok, refused := slotBurst(t, []string{c.url("/")}, "a", 12, 4)
		<-done
		if _, most := b.stats("a"); most != 3 {
			t.Fatalf("the backend held %d of key a at once, want exactly 3 (%d served, %d refused)", most, ok, refused)
		}
		t.Logf("48 requests: %d served, %d refused; backend held 3 at most", ok, refused)
	})

	rds := redistest.Start(t)
	t.Run("redis: two instances, 3 at the backend at most across both", func(t *testing.T) {
		b := startSlowBackend(t, 200*time.Millisecond, false)
		x, y := newCaddy(t), newCaddy(t)
		for _, c := range []*caddy{x, y} {
			c.render(inflightSite, map[string]any{"Redis": rds.Addr(), "Backend": b.addr})
			c.start()
		}
		ok, refused := slotBurst(t, []string{x.url("/"), y.url("/")}, "shared", 12, 4)
		if _, most := b.stats("shared"); most != 3 {
			t.Fatalf("the backend held %d of the key at once through two instances, want exactly 3 (%d served, %d refused)", most, ok, refused)
		}
		t.Logf("48 requests over two instances: %d served, %d refused; backend held 3 at most", ok, refused)
	})

	t.Run("redis: an instance killed holding 3 slots: the other refuses the key until the TTL, then serves", func(t *testing.T) {
		b := startSlowBackend(t, 0, true)
		x, y := newCaddy(t), newCaddy(t)
		for _, c := range []*caddy{x, y} {
			c.render(inflightSite, map[string]any{"Redis": rds.Addr(), "Backend": b.addr})
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
		waitFor(t, "3 requests of the key held at the backend", func() (bool, string) {
			now, _ := b.stats("crash")
			return now == 3, strconv.Itoa(now) + " held"
		})
		x.stop(syscall.SIGKILL)
		killed := time.Now()
		b.free() // the backend is free; only the dead instance's slots remain
		var served time.Duration
		waitWithin(t, 6*time.Second, "the key to be served again", func() (bool, string) {
			_, resp := get(t, y.url("/"), "X-Key", "crash")
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
		b := startSlowBackend(t, 0, true)
		for _, store := range []string{"", rds.Addr()} {
			c := newCaddy(t)
			c.render(inflightSite, map[string]any{"Redis": store, "Backend": b.addr})
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
			waitWithin(t, time.Second, "the slots of the clients that gave up to be free", func() (bool, string) {
				// The backend sees a request end a little after Caddy
				// does (the proxied connection closes): a request sent
				// before then would be a fifth at the backend for a few
				// milliseconds, though Caddy freed the slot in order.
				if now, _ := b.stats(key); now > 0 {
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
			if now, most := b.stats(key); most > 3 {
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
	attack := program(t, "attack")
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			b := startSlowBackend(t, 300*time.Millisecond, false)
			c := newCaddy(t)
			vars := map[string]any{"Backend": b.addr, "Redis": ""}
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
				lines, stderr := run(t, attack, time.Minute, args...)
				_, most := b.stats(a.from)
				if most > 3 || most == 0 {
					t.Errorf("attack %s: the backend held %d of the client at once, want 1 to 3; %s; %s", strings.Join(args, " "), most, tally(lines), stderr)
					continue
				}
				t.Logf("attack %s: the backend held %d at most; the client saw %s", strings.Join(args, " "), most, tally(lines))
			}
			if store == "memory" {
				var wg sync.WaitGroup
				for i := 0; i < 150; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						get(t, c.url("/key/x"), "X-Key", "fresh"+strconv.Itoa(i%75))
					}()
				}
				wg.Wait()
				for i := 0; i < 75; i++ {
					if _, most := b.stats("fresh" + strconv.Itoa(i)); most > 2 {
						t.Errorf("fresh key %d: %d at the backend at once, want at most 2", i, most)
					}
				}
			}
			waitFor(t, "every slot to be free", func() (bool, string) {
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
