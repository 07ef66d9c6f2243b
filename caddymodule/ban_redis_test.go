package caddymodule

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// TestBanRedisClients: a ban set through go-redis (Caddy's client) is
// honoured through shared/resp (Traefik's) on the same Redis, standalone
// and on a three-master Cluster, where the ban key and the count's key
// share a slot; several zones in one request each keep their own ban.
func TestBanRedisClients(t *testing.T) {
	srv := redistest.Start(t)
	addrs := redistest.Cluster(t)
	for _, tc := range []struct {
		name   string
		stores []ratelimit.Store
	}{
		{"standalone", []ratelimit.Store{
			goRedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr()}), false),
			respStore(t, resp.Options{Addrs: []string{srv.Addr()}, ReadTimeout: 2 * time.Second}, false),
		}},
		{"cluster", []ratelimit.Store{
			goRedisStore(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}), true),
			respStore(t, resp.Options{Addrs: addrs, ReadTimeout: 2 * time.Second}, true),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z, err := ratelimit.NewZone("banz", ratelimit.Rule{Window: time.Minute, Limit: 2}, ratelimit.Options{SweepInterval: -1, Ban: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(z.Close)
			other := testZone(t, "otherz", ratelimit.Rule{Window: time.Minute, Limit: 100})
			suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
			for i := 0; i < 8; i++ { // keys in several slots
				key := "client-" + strconv.Itoa(i) + "-" + suffix
				items := []ratelimit.Item{{Zone: other, Key: key + "-x"}, {Zone: z, Key: key}}
				out := make([]ratelimit.Decision, 2)
				for n := 0; n < 2; n++ {
					if ok, err := tc.stores[0].Take(context.Background(), time.Now(), items, out); !ok || err != nil {
						t.Fatalf("%s request %d: %v %v %+v", key, n+1, ok, err, out)
					}
				}
				if ok, err := tc.stores[0].Take(context.Background(), time.Now(), items, out); ok || err != nil || out[1].RetryAfter < 59*time.Minute {
					t.Fatalf("%s, the 3rd request through go-redis: %v %v %+v; want the hour's ban", key, ok, err, out)
				}
				d, err := takeOne(t, tc.stores[1], z, key)
				if err != nil || d.Allowed || d.RetryAfter < 59*time.Minute || d.RetryAfter >= time.Hour {
					t.Fatalf("%s through shared/resp: %+v, %v; want the ban go-redis started, under an hour left", key, d, err)
				}
			}
			if n := z.Bans(); n != 8 {
				t.Fatalf("%d bans started, want 8: one a key, none by the second client", n)
			}
		})
	}
}
