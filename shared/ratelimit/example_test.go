package ratelimit_test

import (
	"fmt"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// A zone of 3 requests per minute and key, kept in this process's memory.
func ExampleNewZone() {
	z, err := ratelimit.NewZone("api", ratelimit.Rule{Window: time.Minute, Limit: 3}, ratelimit.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer z.Close()

	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	for i := 1; i <= 4; i++ {
		d := ratelimit.TakeAt(z, "203.0.113.7", time.Unix(0, now))
		fmt.Printf("request %d: allowed %v, remaining %d, retry after %v\n", i, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Another key has a count of its own.
	fmt.Println("another key:", ratelimit.TakeAt(z, "198.51.100.1", time.Unix(0, now)).Allowed)
	// Output:
	// request 1: allowed true, remaining 2, retry after 0s
	// request 2: allowed true, remaining 1, retry after 0s
	// request 3: allowed true, remaining 0, retry after 0s
	// request 4: allowed false, remaining 0, retry after 1m2s
	// another key: true
}

// A bad value is a *FieldError, which names the setting by a Field: each
// host spells it its own way.
func ExampleFieldError() {
	_, err := ratelimit.NewZone("api", ratelimit.Rule{Window: time.Minute, SubWindow: 7 * time.Second, Limit: 3}, ratelimit.Options{})
	caddyfile := &ratelimit.Spelling{ratelimit.FieldSubWindow: "sub_window"}
	fmt.Println(caddyfile.Error(err))
	// Output:
	// sub_window: 7s does not divide the window 1m0s
}
