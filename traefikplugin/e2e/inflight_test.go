//go:build !race

package e2e

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// slowService records, per X-Key (or, without one, the client's address
// as Traefik forwards it), how many requests it holds at once and the
// most it ever held. A request is held for delay, or until its client is
// gone, or, when delay is 0, until free is called; /plain is answered at
// once.
type slowService struct {
	delay     time.Duration
	mu        sync.Mutex
	now, most map[string]int
	release   chan struct{}
	url       string
}

func startSlowService(t *testing.T, delay time.Duration) *slowService {
	t.Helper()
	s := &slowService{delay: delay, now: map[string]int{}, most: map[string]int{}, release: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s}
	go srv.Serve(l)
	t.Cleanup(func() {
		s.free()
		srv.Close()
	})
	s.url = "http://" + l.Addr().String()
	return s
}

// free lets every held request go, and every later one through at once.
func (s *slowService) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

func (s *slowService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/plain" { // Traefik's readiness check
		w.Write([]byte("ok"))
		return
	}
	k := r.Header.Get("X-Key")
	if k == "" {
		k = r.Header.Get("X-Forwarded-For")
	}
	s.mu.Lock()
	s.now[k]++
	s.most[k] = max(s.most[k], s.now[k])
	s.mu.Unlock()
	var wait <-chan time.Time
	if s.delay > 0 {
		wait = time.After(s.delay)
	}
	select {
	case <-wait:
	case <-s.release:
	case <-r.Context().Done():
	}
	s.mu.Lock()
	s.now[k]--
	s.mu.Unlock()
	w.Write([]byte("ok"))
}

func (s *slowService) mostOf(k string) int {
	_, most := s.stats(k)
	return most
}

// stats returns how many requests of k the service holds now and the most
// it ever held at once.
func (s *slowService) stats(k string) (now, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now[k], s.most[k]
}

// clients sends 12 clients x 4 requests of key at once, spread over
// instances, and returns how many got 200 and 429.
func clients(t *testing.T, key string, instances ...*traefiktest.Traefik) (ok, refused int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := 0; c < 12; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				req, resp := traefiktest.Get(t, instances[(c+i)%len(instances)].URL("/slots"), "X-Key", key)
				mu.Lock()
				switch {
				case resp.Status == 200:
					ok++
				case resp.Status == 429 && resp.Header.Get("Retry-After") == "1":
					refused++
				default:
					t.Errorf("%v: %v, want 200, or 429 with Retry-After 1", req, resp)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ok, refused
}

// TestE2EInFlight: inFlight 3 through a real Traefik: 12 clients on one
// key leave 3 at a slow service at most, through one instance in memory
// and through two instances on one Redis; an instance killed while it
// holds 3 slots leaves the key refused by the other until the slots'
// TTL has passed, then served.
func TestE2EInFlight(t *testing.T) {
	t.Run("memory, one instance", func(t *testing.T) {
		svc := startSlowService(t, 200*time.Millisecond)
		tr := start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", map[string]any{"Backend": svc.url, "Redis": ""})
		ok, refused := clients(t, "a", tr)
		if got := svc.mostOf("a"); got != 3 {
			t.Fatalf("the service held %d of the key at once, want exactly 3 (%d served, %d refused)", got, ok, refused)
		}
		t.Logf("48 requests: %d served, %d refused; the service held 3 at most", ok, refused)
	})
	t.Run("redis, two instances", func(t *testing.T) {
		rds := redistest.Start(t)
		svc := startSlowService(t, 200*time.Millisecond)
		data := map[string]any{"Backend": svc.url, "Redis": rds.Addr(), "TTL": "5s"}
		a, b := start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", data), start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", data)
		ok, refused := clients(t, "shared", a, b)
		if got := svc.mostOf("shared"); got != 3 {
			t.Fatalf("the service held %d of the key at once through two instances, want exactly 3 (%d served, %d refused)", got, ok, refused)
		}
		t.Logf("48 requests over two instances: %d served, %d refused; the service held 3 at most", ok, refused)
	})
	t.Run("redis, an instance killed holding 3 slots: the other refuses the key until the TTL, then serves", func(t *testing.T) {
		rds := redistest.Start(t)
		svc := startSlowService(t, 0) // holds every request until free
		data := map[string]any{"Backend": svc.url, "Redis": rds.Addr(), "TTL": "2s"}
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
		traefiktest.WaitFor(t, 5*time.Second, "3 requests of the key held at the service through instance a", func() (bool, string) {
			now, _ := svc.stats("crash")
			return now == 3, strconv.Itoa(now) + " held"
		})
		held := traefiktest.Request{URL: b.URL("/slots"), Header: []string{"X-Key", "crash"}, Timeout: 2 * time.Second}
		if resp, err := traefiktest.Send(held); err != nil || resp.Status != 429 {
			t.Fatalf("instance b while a holds the key's 3 slots: %v: %v (error %v), want 429", held, resp, err)
		}
		a.Stop(syscall.SIGKILL)
		killed := time.Now()
		svc.free() // the service holds nothing now; only the dead instance's slots remain
		var served time.Duration
		var refused int
		traefiktest.WaitFor(t, 6*time.Second, "instance b to serve the key again", func() (bool, string) {
			req, resp := traefiktest.Get(t, b.URL("/slots"), "X-Key", "crash")
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
