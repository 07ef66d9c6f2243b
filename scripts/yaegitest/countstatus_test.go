package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestPluginCountStatus runs countStatus interpreted, given as a label
// (one comma-separated string): only the 401s count, the 6th failed
// login is rejected without reaching the backend, and the 200s, the
// statuses outside the list and the rejections never count.
func TestPluginCountStatus(t *testing.T) {
	b, _ := loadPlugin(t)
	cfg, err := b.createConfig(map[string]any{"window": "15m", "limit": "5", "countStatus": "401,500-599"})
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		code, _ := strconv.Atoi(r.Header.Get("X-Status"))
		w.WriteHeader(code)
	})
	h, err := b.newHandler(next, cfg, "login@docker")
	if err != nil {
		t.Fatal(err)
	}
	login := func(status int) int {
		r := httptest.NewRequest(http.MethodPost, "http://example.com/login", nil)
		r.RemoteAddr = "203.0.113.7:1"
		r.Header.Set("X-Status", strconv.Itoa(status))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i, s := range []int{200, 200, 404, 401, 200, 503, 401, 401, 401} {
		if got := login(s); got != s {
			t.Fatalf("request %d (a %d): %d", i, s, got)
		}
	}
	before := hits
	for i := 0; i < 3; i++ {
		if got := login(200); got != http.StatusTooManyRequests {
			t.Fatalf("after 5 counted responses: %d, want 429", got)
		}
	}
	if hits != before {
		t.Fatalf("the backend saw %d rejected requests", hits-before)
	}
}
