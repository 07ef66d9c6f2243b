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

// Addresses grouped by prefix share one key: Caddy's ipv4_prefix and
// ipv6_prefix, Traefik's ipv6Subnet. An IPv4-mapped address is IPv4.
func ExampleMaskIP() {
	fmt.Println(httplimit.MaskIP("203.0.113.77", 24, 64))
	fmt.Println(httplimit.MaskIP("2001:db8:1:2:3:4:5:6", 24, 64))
	fmt.Println(httplimit.MaskIP("::ffff:203.0.113.77", 0, 64))
	// Output:
	// 203.0.113.0/24
	// 2001:db8:1:2::/64
	// 203.0.113.77
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
