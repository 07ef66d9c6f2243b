package traefikplugin

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestClockStepBack: a client is denied while the wall clock reads a few
// minutes ahead, and the clock then steps back. The denial cached then
// ran until a time over W+T away from the new now; the memory path
// indexed its decimals table with that and panicked (index out of range
// [4398] with length 4096 for a 1h window). The client must get a 429
// with headers within the window.
func TestClockStepBack(t *testing.T) {
	c := validConfig()
	c.Window = "1h"
	c.Limit = 5
	h := newMiddleware(t, c, "clockstep@file")
	m := middlewareOf(h)
	if m.path >= pathRedis {
		t.Fatal("the middleware does not take the memory path")
	}
	rule := m.zone.Rule()
	span := int64(rule.SubWindow)
	// The clock read at least 2.3 minutes ahead, at the start of a
	// sub-window: the key's reset is then W+T after it.
	now := time.Now().UnixNano()
	ahead := ((now+int64(138*time.Second))/span + 1) * span
	for i := 0; i <= 5; i++ {
		ratelimit.TakeAt(m.zone, "203.0.113.7", time.Unix(0, ahead))
	}

	var w *httptest.ResponseRecorder
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("ServeHTTP panicked after the clock stepped back %v: %v", time.Duration(ahead-now), p)
			}
		}()
		rec := serve(h, "203.0.113.7:4711", nil)
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("status %d, want 429", rec.Code)
		}
		w = rec
	}()
	bound := int64((rule.Window + rule.SubWindow) / time.Second)
	for _, name := range []string{"Retry-After", "X-RateLimit-Reset"} {
		v, err := strconv.ParseInt(w.Header().Get(name), 10, 64)
		if err != nil || v < 1 || v > bound {
			t.Errorf("%s %q, want 1..%d", name, w.Header().Get(name), bound)
		}
	}
	if got := w.Header().Get("X-RateLimit-Remaining"); got != "0" {
		t.Errorf("X-RateLimit-Remaining %q, want 0", got)
	}
}
