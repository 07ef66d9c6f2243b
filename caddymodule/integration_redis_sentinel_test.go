package caddymodule

import (
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// Caddy configured with `sentinel mymaster <sentinel>` finds the master
// through a real Redis Sentinel and keeps the limit there; after a
// failover it carries on against the promoted replica.
func TestIntegrationRedisSentinel(t *testing.T) {
	// No delay before a full sync, so the replica attaches at once.
	master := redistest.Start(t, "--repl-diskless-sync-delay", "0")
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
	// Attached before the sentinel starts, the replica is in the master's
	// first INFO to the sentinel: no wait for the next one (10s).
	master.WaitReplicas(t, 1)
	sentinel := redistest.StartSentinel(t, "mymaster", master.Addr())
	tc := newTester(t)
	port := freePort(t)
	// deny: a request that does not reach a master is refused, so every
	// 200 below went through Redis.
	config, prefix := redisBlockSite(port, "sentinel mymaster "+sentinel.Addr(), "deny")
	tc.InitServer(config, "caddyfile")
	// The replica is read-only: the key can only have been written on the
	// master.
	expectLimitedThroughRedis(t, tc, master, port, prefix, "alice")
	if n := master.Do(t, "WAIT", "1", "2000")[0]; n != "1" {
		t.Fatalf("the replica did not acknowledge alice's count: WAIT answered %s", n)
	}

	promoted := sentinel.Failover(t, "mymaster")
	if promoted != replica.Addr() {
		t.Fatalf("sentinel promoted %s, want the replica %s", promoted, replica.Addr())
	}
	// The old master dies, as in an outage, so no write can land there.
	master.Kill()
	// go-redis hears of the switch from the sentinel; until then a request
	// may fail (and be denied). Wait for one that counts on the new master.
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/?who="
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		who := "probe" + strconv.Itoa(i)
		resp, _ := get(t, tc, url+who)
		if resp.StatusCode == 200 && replica.Do(t, "EXISTS", prefix+"ired:{"+who+"}")[0] == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after the failover, requests are not counted on the new master (last: %d)", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	expectLimitedThroughRedis(t, tc, replica, port, prefix, "carol")
	// alice's count was replicated before the failover: still over.
	if resp, _ := get(t, tc, url+"alice"); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "1" {
		t.Errorf("alice after the failover: %d Retry-After %q, want the limit's 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// Sentinels with a password of their own: sentinel_password reaches them,
// and without it no request is counted in Redis.
func TestIntegrationRedisSentinelPassword(t *testing.T) {
	master := redistest.Start(t)
	sentinel := redistest.StartSentinel(t, "mymaster", master.Addr(), "requirepass watch-pass")
	tc := newTester(t)
	port := freePort(t)
	t.Setenv("WL_TEST_SENTINEL_PASSWORD", "watch-pass")
	config, prefix := redisBlockSite(port, "sentinel mymaster "+sentinel.Addr()+"\n\t\t\tsentinel_password {env.WL_TEST_SENTINEL_PASSWORD}", "deny")
	tc.InitServer(config, "caddyfile")
	expectLimitedThroughRedis(t, tc, master, port, prefix, "alice")

	// Without the password the sentinels refuse to name the master: the
	// deny policy answers, Retry-After 1, and nothing reaches Redis.
	port = freePort(t)
	config, prefix = redisBlockSite(port, "sentinel mymaster "+sentinel.Addr(), "deny")
	tc.InitServer(config, "caddyfile")
	resp, _ := get(t, tc, "http://127.0.0.1:"+strconv.Itoa(port)+"/?who=bob")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("without sentinel_password: %d Retry-After %q, want the deny policy's 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := master.Do(t, "EXISTS", prefix+"ired:{bob}")[0]; n != "0" {
		t.Fatal("a request was counted without the sentinels' password")
	}
}
