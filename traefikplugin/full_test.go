package traefikplugin

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log sink the sweeper's goroutine can write to while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFullZoneLogged: a zone that evicts keys that still count says so in
// Traefik's log, with the middleware's name and what to do, and the client
// at its limit stays limited through the evictions.
func TestFullZoneLogged(t *testing.T) {
	var log lockedBuffer
	fullLog = &log
	// Registered before newMiddleware's cleanup, so it runs after the
	// zone is closed.
	t.Cleanup(func() { fullLog = errorLog })
	c := validConfig()
	c.Window = "1s" // the sweeper runs every second
	c.Limit = 2
	c.MaxKeys = 2
	h := newMiddleware(t, c, "full@file")
	for i := 0; i < 3; i++ {
		serve(h, "203.0.113.1:1", nil)
	}
	for _, ip := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
		serve(h, ip+":1", nil)
	}
	if w := serve(h, "203.0.113.1:1", nil); w.Code != 429 {
		t.Fatalf("the limited client after the evictions: %d, want 429", w.Code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), "zone full") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	got := log.String()
	for _, want := range []string{`middleware "full@file": zone full (maxKeys 2): evicted `, " in all;", "raise maxKeys"} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
}
