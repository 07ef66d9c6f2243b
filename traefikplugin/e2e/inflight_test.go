//go:build !race

package e2e

import (
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// slowService records, per X-Key, the most requests it held at once,
// each held for 200 ms.
type slowService struct {
	mu        sync.Mutex
	now, most map[string]int
	url       string
}

func startSlowService(t *testing.T) *slowService {
	t.Helper()
	s := &slowService{now: map[string]int{}, most: map[string]int{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	s.url = "http://" + l.Addr().String()
	return s
}

func (s *slowService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := r.Header.Get("X-Key")
	s.mu.Lock()
	s.now[k]++
	s.most[k] = max(s.most[k], s.now[k])
	s.mu.Unlock()
	select {
	case <-time.After(200 * time.Millisecond):
	case <-r.Context().Done():
	}
	s.mu.Lock()
	s.now[k]--
	s.mu.Unlock()
	w.Write([]byte("ok"))
}

func (s *slowService) mostOf(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most[k]
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
// and through two instances on one Redis.
func TestE2EInFlight(t *testing.T) {
	t.Run("memory, one instance", func(t *testing.T) {
		svc := startSlowService(t)
		tr := start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", map[string]any{"Backend": svc.url, "Redis": ""})
		ok, refused := clients(t, "a", tr)
		if got := svc.mostOf("a"); got != 3 {
			t.Fatalf("the service held %d of the key at once, want exactly 3 (%d served, %d refused)", got, ok, refused)
		}
		t.Logf("48 requests: %d served, %d refused; the service held 3 at most", ok, refused)
	})
	t.Run("redis, two instances", func(t *testing.T) {
		rds := redistest.Start(t)
		svc := startSlowService(t)
		data := map[string]any{"Backend": svc.url, "Redis": rds.Addr()}
		a, b := start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", data), start(t, traefiktest.Options{}, "fixtures/inflight/dynamic.yml", data)
		ok, refused := clients(t, "shared", a, b)
		if got := svc.mostOf("shared"); got != 3 {
			t.Fatalf("the service held %d of the key at once through two instances, want exactly 3 (%d served, %d refused)", got, ok, refused)
		}
		t.Logf("48 requests over two instances: %d served, %d refused; the service held 3 at most", ok, refused)
	})
}
