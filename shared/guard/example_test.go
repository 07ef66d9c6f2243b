package guard_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// Counts kept in Redis are shared by every instance that uses the same
// Redis. The guard in front of the store decides by its failure policy
// when Redis fails, and logs what happens through the host's function.
func ExampleNewLogged() {
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
	store, err := redisstore.New(client, redisstore.Settings{KeyPrefix: "example:"})
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := guard.Options{OnError: guard.FailDeny, Store: "redis", NotCounted: redisstore.ErrOutOfMemory}
	g, err := guard.NewLogged(store, opts, func(e guard.Event) {
		fmt.Println(e.Line(&ratelimit.Spelling{guard.FieldOnStoreError: "on_store_error"}))
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()

	z, err := ratelimit.NewZone("login", ratelimit.Rule{Window: time.Minute, Limit: 2}, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer z.Close()
	items := []ratelimit.Item{{Zone: z, Key: "alice"}}
	out := make([]ratelimit.Decision, 1)
	for i := 1; i <= 3; i++ {
		allowed, _ := g.Take(context.Background(), time.Now(), items, out)
		fmt.Printf("request %d: allowed %v, remaining %d\n", i, allowed, out[0].Remaining)
	}
	fmt.Println("key in redis:", srv.Exists("example:login:{alice}"))
	// Output:
	// request 1: allowed true, remaining 1
	// request 2: allowed true, remaining 0
	// request 3: allowed false, remaining 0
	// key in redis: true
}
