package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
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
		d := ratelimit.TakeAt(z, "203.0.113.7", now)
		fmt.Printf("request %d: allowed %v, remaining %d, retry after %v\n", i, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Another key has a count of its own.
	fmt.Println("another key:", ratelimit.TakeAt(z, "198.51.100.1", now).Allowed)
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

// Counts kept in Redis are shared by every instance that uses the same
// Redis. The guard in front of the store decides by its failure policy
// when Redis fails, and logs what happens through the host's function.
func ExampleNewRedisGuard() {
	srv, err := miniredis.Run() // a Redis server in this process
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	client, err := resp.New(resp.Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	store, err := ratelimit.NewRedisStore(client, ratelimit.RedisOptions{KeyPrefix: "example:"})
	if err != nil {
		fmt.Println(err)
		return
	}
	guard, err := ratelimit.NewRedisGuard(store, ratelimit.FailDeny, nil, func(e ratelimit.GuardEvent) {
		fmt.Println(e.Line(&ratelimit.Spelling{ratelimit.FieldOnStoreError: "on_store_error"}))
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer guard.Close()

	z, err := ratelimit.NewZone("login", ratelimit.Rule{Window: time.Minute, Limit: 2}, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer z.Close()
	items := []ratelimit.Item{{Zone: z, Key: "alice"}}
	out := make([]ratelimit.Decision, 1)
	for i := 1; i <= 3; i++ {
		allowed, _ := guard.Take(context.Background(), time.Now(), items, out)
		fmt.Printf("request %d: allowed %v, remaining %d\n", i, allowed, out[0].Remaining)
	}
	fmt.Println("key in redis:", srv.Exists("example:login:{alice}"))
	// Output:
	// request 1: allowed true, remaining 1
	// request 2: allowed true, remaining 0
	// request 3: allowed false, remaining 0
	// key in redis: true
}
