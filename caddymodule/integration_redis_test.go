package caddymodule

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// redisSite is a site whose zone "ired" (5 per minute per ?who=) keeps its
// counts in the redis-server at addr.
func redisSite(port int, addr, prefix, policy string) string {
	return siteConfig(port, `rate_limit {
		zone ired {
			key {query.who}
			window 1m
			limit 5
		}
		store redis {
			address `+addr+`
			key_prefix `+prefix+`
			timeout 200ms
		}
		on_store_error `+policy+`
	}`)
}

func redisCount() int {
	n := 0
	redisStores.Range(func(_, _ any) bool { n++; return true })
	return n
}

// Another instance (here a go-redis store of its own) and Caddy share one
// limit through Redis; with Redis gone, on_store_error decides.
func TestIntegrationRedis(t *testing.T) {
	srv := redistest.Start(t)
	tc := newTester(t)
	port := freePort(t)
	prefix := "it" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	tc.InitServer(redisSite(port, srv.Addr(), prefix, "deny"), "caddyfile")
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/?who=alice"

	// The other instance takes 3 of alice's 5 requests.
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	otherStore, err := redisstore.New(newGoRedisRunner(client), redisstore.Settings{KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	zone := testZone(t, "ired", ratelimit.Rule{Window: time.Minute, Limit: 5})
	for i := 0; i < 3; i++ {
		if d, err := takeOne(t, otherStore, zone, "alice"); err != nil || !d.Allowed {
			t.Fatalf("other instance, request %d: %+v %v", i+1, d, err)
		}
	}
	for i := 1; i <= 3; i++ {
		resp, _ := get(t, tc, url)
		want := 200
		if i == 3 {
			want = 429
		}
		if resp.StatusCode != want {
			t.Fatalf("caddy request %d: %d, want %d (3 taken by the other instance)", i, resp.StatusCode, want)
		}
		if i == 1 && resp.Header.Get("X-RateLimit-Remaining") != "1" {
			t.Errorf("remaining %q, want 1", resp.Header.Get("X-RateLimit-Remaining"))
		}
	}
	ttl, err := client.PTTL(context.Background(), prefix+"ired:{alice}").Result()
	if err != nil || ttl <= 0 || ttl > 66*time.Second {
		t.Errorf("PTTL of the zone's key: %v %v", ttl, err)
	}

	// Redis gone: deny answers 429 with Retry-After 1, and the metrics
	// count the failure. (alice stays denied from the denial cache.)
	srv.Kill()
	resp, _ := get(t, tc, "http://127.0.0.1:"+strconv.Itoa(port)+"/?who=bob")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("redis down, deny: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	mresp, err := http.Get("http://localhost:" + strconv.Itoa(adminPort) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, m := range []string{"caddy_http_rate_limit_store_errors_total ", "caddy_http_rate_limit_store_fallbacks_total ", "caddy_http_rate_limit_store_out_of_memory_total ", "caddy_http_rate_limit_store_overloaded_total ", "caddy_http_rate_limit_store_breakers_open 1"} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("metrics lack %q", m)
		}
	}
	if strings.Contains(string(metrics), "caddy_http_rate_limit_store_errors_total 0") {
		t.Error("the redis failure was not counted")
	}
}

// Reloads share the client of an unchanged store and close replaced ones.
func TestIntegrationRedisReloads(t *testing.T) {
	srv := redistest.Start(t)
	tc := newTester(t)
	port := freePort(t)
	tc.InitServer(redisSite(port, srv.Addr(), "reload0:", "allow"), "caddyfile")
	before := redisCount()
	tc.InitServer(redisSite(port, srv.Addr(), "reload0:", "allow"), "caddyfile")
	for i := 1; i <= 10; i++ {
		tc.InitServer(redisSite(port, srv.Addr(), "reload"+strconv.Itoa(i)+":", "allow"), "caddyfile")
		if r, _ := get(t, tc, "http://127.0.0.1:"+strconv.Itoa(port)+"/"); r.StatusCode != 200 {
			t.Fatalf("reload %d: %d", i, r.StatusCode)
		}
	}
	if n := redisCount(); n != before {
		t.Errorf("%d redis clients after 11 reloads, %d before", n, before)
	}
	// The memory store drops the last client.
	tc.InitServer(siteConfig(port, "rate_limit {\n\t\tzone ired {\n\t\t\twindow 1m\n\t\t\tlimit 5\n\t\t}\n\t}"), "caddyfile")
	if n := redisCount(); n != before-1 {
		t.Errorf("%d redis clients after going back to memory, want %d", n, before-1)
	}
}
