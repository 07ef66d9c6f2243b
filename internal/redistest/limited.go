package redistest

import (
	"net/http"
	"strconv"
	"testing"
)

// ExpectLimited checks a limit of 5 requests per minute whose counts are
// kept in srv. Of 6 requests made by send, which returns the status and
// headers of its response, the first 5 must pass with
// X-RateLimit-Remaining counting down, and the 6th must be refused by the
// limit, not by the failure policy deny (whose Retry-After is 1). Then key
// must be in srv, expiring within the window and a sub-window.
func ExpectLimited(t testing.TB, srv *Server, key string, send func() (int, http.Header)) {
	t.Helper()
	for i := 1; i <= 6; i++ {
		status, h := send()
		want := http.StatusOK
		if i == 6 {
			want = http.StatusTooManyRequests
		}
		if status != want {
			t.Fatalf("request %d: %d (Retry-After %q), want %d", i, status, h.Get("Retry-After"), want)
		}
		if remaining := h.Get("X-RateLimit-Remaining"); i <= 5 && remaining != strconv.Itoa(5-i) {
			t.Errorf("request %d: X-RateLimit-Remaining %q", i, remaining)
		}
		if ra := h.Get("Retry-After"); i == 6 && (ra == "1" || ra == "") {
			t.Errorf("request 6: Retry-After %q: refused by the failure policy, not by the limit", ra)
		}
	}
	if ttl, err := strconv.ParseInt(srv.Do(t, "PTTL", key)[0], 10, 64); err != nil || ttl <= 0 || ttl > 66000 {
		t.Errorf("PTTL %s: %d %v, want the key to expire within window + sub-window", key, ttl, err)
	}
}
