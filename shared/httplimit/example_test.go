package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// A source behind one trusted proxy takes the address that proxy appended
// to X-Forwarded-For; the default source takes the remote address, with
// IPv6 clients grouped by /64.
func ExampleNewSource() {
	strategy, err := httplimit.NewIPStrategy(1, nil, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	behindProxy, err := httplimit.NewSource(httplimit.SourceCriterion{IPStrategy: strategy})
	if err != nil {
		fmt.Println(err)
		return
	}
	direct, err := httplimit.NewSource(httplimit.SourceCriterion{})
	if err != nil {
		fmt.Println(err)
		return
	}

	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "[2001:db8:1:2:3:4:5:6]:4711"
	r.Header.Set("X-Forwarded-For", "10.0.0.1, 203.0.113.7")
	fmt.Println(httplimit.KeyOf(behindProxy, r))
	fmt.Println(httplimit.KeyOf(direct, r))
	// Output:
	// 203.0.113.7
	// 2001:db8:1:2::/64
}

// A denied request gets the rate-limit headers of its policy, Retry-After,
// and the status and body the host chose.
func ExampleWriteRejection() {
	p := httplimit.NewPolicy("api", time.Minute, 100, httplimit.HeadersBoth)
	d := ratelimit.Decision{Limit: 100, RetryAfter: 2500 * time.Millisecond, ResetAfter: time.Minute}

	w := httptest.NewRecorder()
	httplimit.WriteRejection(p, w, d, http.StatusTooManyRequests, "Too Many Requests")
	names := make([]string, 0, len(w.Header()))
	for name := range w.Header() {
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Println(w.Code, w.Body.String())
	for _, name := range names {
		fmt.Printf("%s: %s\n", name, w.Header().Get(name))
	}
	// Output:
	// 429 Too Many Requests
	// Content-Length: 17
	// Content-Type: text/plain; charset=utf-8
	// Ratelimit: "api";r=0;t=3
	// Ratelimit-Policy: "api";q=100;w=60
	// Retry-After: 3
	// X-Content-Type-Options: nosniff
	// X-Ratelimit-Limit: 100
	// X-Ratelimit-Remaining: 0
	// X-Ratelimit-Reset: 60
}
