package e2etest

import (
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// SlowBackend records, per X-Key (or, without one, the client's address
// as the proxy forwards it in X-Forwarded-For), how many requests it
// holds at once and the most it ever held. A request is held for delay,
// or until its client is gone, or, when delay is 0, until Free is called;
// /plain (Traefik's readiness check) is answered at once.
type SlowBackend struct {
	Addr string // host:port

	delay     time.Duration
	mu        sync.Mutex
	now, most map[string]int
	release   chan struct{}
}

// StartSlowBackend serves on a free loopback port until the test ends.
func StartSlowBackend(tb testing.TB, delay time.Duration) *SlowBackend {
	tb.Helper()
	b := &SlowBackend{delay: delay, now: map[string]int{}, most: map[string]int{}, release: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: b}
	go srv.Serve(l)
	tb.Cleanup(func() {
		b.Free()
		srv.Close()
	})
	b.Addr = l.Addr().String()
	return b
}

// URL returns the backend's base URL.
func (b *SlowBackend) URL() string { return "http://" + b.Addr }

// Free lets every held request go, and every later one through at once.
func (b *SlowBackend) Free() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.release:
	default:
		close(b.release)
	}
}

func (b *SlowBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/plain" {
		w.Write([]byte("ok"))
		return
	}
	k := r.Header.Get("X-Key")
	if k == "" {
		k = r.Header.Get("X-Forwarded-For")
	}
	b.mu.Lock()
	b.now[k]++
	b.most[k] = max(b.most[k], b.now[k])
	b.mu.Unlock()
	var wait <-chan time.Time
	if b.delay > 0 {
		wait = time.After(b.delay)
	}
	select {
	case <-wait:
	case <-b.release:
	case <-r.Context().Done():
	}
	b.mu.Lock()
	b.now[k]--
	b.mu.Unlock()
	w.Write([]byte("ok"))
}

// Stats returns how many requests of k the backend holds now and the most
// it ever held at once.
func (b *SlowBackend) Stats(k string) (now, most int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now[k], b.most[k]
}
