package traefikplugin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// statusBackend answers the status named by the X-Status header (200
// without it) and counts the requests it sees.
type statusBackend struct{ hits int }

func (b *statusBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.hits++
	code := http.StatusOK
	if v := r.Header.Get("X-Status"); v != "" {
		code, _ = strconv.Atoi(v)
	}
	w.WriteHeader(code)
}

func countStatusMiddleware(t *testing.T, c *Config, name string, b http.Handler) http.Handler {
	t.Helper()
	forget(name)
	t.Cleanup(func() { forget(name); forgetRedis(name) })
	h, err := newChecked(context.Background(), b, c, name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func loginAs(h http.Handler, status int) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "http://example.com/login", nil)
	r.RemoteAddr = "203.0.113.7:4711"
	r.Header.Set("X-Status", strconv.Itoa(status))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// testCountStatus: with countStatus 401 and limit 5, 200s never count,
// 401s do, the 6th failed login is rejected without reaching the backend,
// and that rejection counts nothing.
func testCountStatus(t *testing.T, c *Config, name string) {
	c.Window, c.Limit, c.CountStatus = "15m", 5, []string{"401"}
	b := new(statusBackend)
	h := countStatusMiddleware(t, c, name, b)
	for i := 0; i < 10; i++ {
		if w := loginAs(h, 200); w.Code != 200 {
			t.Fatalf("successful login %d: %d", i, w.Code)
		}
	}
	for i := 0; i < 5; i++ {
		w := loginAs(h, 401)
		if w.Code != 401 {
			t.Fatalf("failed login %d: %d", i, w.Code)
		}
		if got := w.Header().Get("X-RateLimit-Remaining"); got != strconv.Itoa(4-i) {
			t.Fatalf("failed login %d: X-RateLimit-Remaining %q, want %d", i, got, 4-i)
		}
	}
	hits := b.hits
	for i := 0; i < 3; i++ {
		if w := loginAs(h, 200); w.Code != 429 || w.Header().Get("Retry-After") == "" {
			t.Fatalf("login after 5 failures: %d, Retry-After %q, want 429", w.Code, w.Header().Get("Retry-After"))
		}
	}
	if b.hits != hits {
		t.Fatalf("the backend saw %d rejected requests", b.hits-hits)
	}
}

func TestCountStatusMemory(t *testing.T) {
	testCountStatus(t, CreateConfig(), "login@file")
}

func TestCountStatusRedis(t *testing.T) {
	srv := redistest.Start(t)
	testCountStatus(t, redisConfig(srv.Addr(), 5), "login-redis@file")
}

// TestCountStatusRanges: a range counts each of its codes, and a label's
// comma-separated string is split.
func TestCountStatusRanges(t *testing.T) {
	c := validConfig()
	c.Limit, c.CountStatus = 3, []string{"403,500-599"}
	h := countStatusMiddleware(t, c, "ranges@file", new(statusBackend))
	for _, s := range []int{200, 404, 403, 500, 599} {
		if w := loginAs(h, s); w.Code != s {
			t.Fatalf("status %d passed as %d", s, w.Code)
		}
	}
	if w := loginAs(h, 200); w.Code != 429 {
		t.Fatalf("after 403, 500 and 599: %d, want 429", w.Code)
	}
}

func TestCountStatusBadValues(t *testing.T) {
	for _, list := range [][]string{{}, {""}, {"4xx"}, {"600"}, {"500-"}, {"599-500"}, {"401,"}} {
		c := validConfig()
		c.CountStatus = list
		_, err := newChecked(context.Background(), okHandler, c, "bad@file")
		if err == nil || !strings.Contains(err.Error(), "countStatus") {
			t.Errorf("countStatus %q: error %v, want one naming countStatus", list, err)
		}
	}
}
