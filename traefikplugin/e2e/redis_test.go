//go:build !race

package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// twoInstances starts two instances of fixture over data.
func twoInstances(t *testing.T, fixture string, data map[string]any) (a, b *traefiktest.Traefik) {
	t.Helper()
	return start(t, traefiktest.Options{}, fixture, data), start(t, traefiktest.Options{}, fixture, data)
}

// checkShared sends 22 requests alternating between a and b: exactly 20 x
// 200, X-RateLimit-Remaining 19..0 across both and X-RateLimit-Reset > 0
// (counted in Redis: the allow policy answers Reset 0), then 429 with
// Retry-After.
func checkShared(t *testing.T, a, b *traefiktest.Traefik, path string, header ...string) {
	t.Helper()
	for n := 1; n <= 22; n++ {
		req, resp := e2etest.Get(t, alternate(n, a, b).URL(path), header...)
		if n <= 20 {
			if resp.Status != 200 || resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(20-n) ||
				!positive.MatchString(resp.Header.Get("X-RateLimit-Reset")) {
				t.Fatalf("request %d (instance %s): %v: %v, want 200, X-RateLimit-Remaining %d (one count) and X-RateLimit-Reset > 0 (counted in Redis)",
					n, name(n), req, resp, 20-n)
			}
		} else if resp.Status != 429 || !positive.MatchString(resp.Header.Get("Retry-After")) {
			t.Fatalf("request %d (instance %s): %v: %v, want 429 with Retry-After", n, name(n), req, resp)
		}
	}
}

// noPluginErrors fails when an instance logged an error of the plugin.
func noPluginErrors(t *testing.T, trs ...*traefiktest.Traefik) {
	t.Helper()
	for i, tr := range trs {
		if lines := tr.LogLines(`(?i)windowlimit.*error|plugin.*error`); len(lines) > 0 {
			t.Errorf("instance %s logged plugin errors: %q", name(i+1), lines)
		}
	}
}

// TestE2ERedisShared runs two instances on one redis-server: one limit
// shared, leases that give back what they did not spend, overrides, and
// countStatus.
func TestE2ERedisShared(t *testing.T) {
	t.Parallel() // it mostly waits: sub-windows
	be := e2etest.StartBackend(t)
	rds := redistest.Start(t)
	a, b := twoInstances(t, "fixtures/redis/dynamic.yml", map[string]any{"Backend": be.URL(), "Redis": rds.Addr()})

	t.Run("one limit of 20 a minute across two instances", func(t *testing.T) {
		checkShared(t, a, b, "/limited")
		if got := rds.Keys(t, "e2e:*"); strings.Join(got, " ") != "e2e:api-limit@file:{127.0.0.1}" {
			t.Errorf("KEYS e2e:*: %q, want e2e:api-limit@file:{127.0.0.1}", got)
		}
		noPluginErrors(t, a, b)
	})
	t.Run("leases spare script calls and give back what they did not spend", func(t *testing.T) {
		e2etest.LeasesGiveBack(t, rds, "hot:hot-limit@file:{127.0.0.1}", a.URL("/hot"), b.URL("/hot"))
	})
	t.Run("overrides", func(t *testing.T) {
		checkOverrides(t, a, b, "/tiers", "/internal")
	})
	t.Run("countStatus 401 counts only the 401s", func(t *testing.T) {
		checkCountStatus(t, a, b, "/login")
		if got := rds.Keys(t, "login:*"); strings.Join(got, " ") != "login:login-limit@file:{127.0.0.1}" {
			t.Errorf("KEYS login:*: %q, want login:login-limit@file:{127.0.0.1}", got)
		}
	})
}

// TestE2ERedisChaos kills the redis-server (SIGKILL) under load and
// restarts it: with the default onStoreError allow every request is
// answered 200, none 5xx, a middleware with onStoreError deny answers 429
// with Retry-After: 1 meanwhile, and once Redis is back the two instances
// count one limit again within 1 s.
func TestE2ERedisChaos(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	rds := redistest.Start(t)
	a, b := twoInstances(t, "fixtures/redis/dynamic.yml", map[string]any{"Backend": be.URL(), "Redis": rds.Addr()})

	t.Run("redis killed under load: allowed by the policy, denied by deny", func(t *testing.T) {
		e2etest.ChaosLoad(t, a.URL("/chaos"), a.URL("/deny"), rds.Kill)
	})
	t.Run("redis restarted: one shared count again within 1 s", func(t *testing.T) {
		rec, up, atA, atB := e2etest.SharedAgain(t, rds.Restart, a.URL("/chaos"), b.URL("/chaos"))
		checkShared(t, a, b, "/chaos", "X-Key", "after")
		if n := rds.StoredCount(t, "chaos:chaos-limit@file:{after}"); n != 20 {
			t.Fatalf("chaos:chaos-limit@file:{after} holds %d in redis, want 20", n)
		}
		e2etest.AdmitsAgain(t, a.URL("/deny"))
		failed := `windowlimit: error: redis ` + regexp.QuoteMeta(rds.Addr()) + `: .*onStoreError allow`
		again := `windowlimit: info: redis ` + regexp.QuoteMeta(rds.Addr()) + `: redis store answers again`
		if !a.Logged(failed, 2*time.Second) || !a.Logged(again, 2*time.Second) {
			t.Errorf("instance a's log has no line matching %q or none matching %q:\n%q", failed, again, a.LogLines("windowlimit"))
		}
		t.Logf("recovered in %.2f s (redis up after %.2f s, a counting in it after %.2f s, b after %.2f s); then 20 x 200 alternating on a fresh key, 429, and 20 in redis",
			rec.Seconds(), up.Seconds(), atA.Seconds(), atB.Seconds())
	})
}

// TestE2ERedisCluster runs two instances on a three-master Redis Cluster
// (scripts/redis-cluster.sh): a router whose two middlewares (by client
// address, and by X-User) keep their counts there gives exactly 20 x 200
// across the instances, then 429, and both keys are in the cluster.
func TestE2ERedisCluster(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	nodes := redistest.Cluster(t)
	a, b := twoInstances(t, "fixtures/redis/cluster.yml", map[string]any{"Backend": be.URL(), "Nodes": nodes})
	checkShared(t, a, b, "/cluster", "X-User", "alice")

	// cluster-user sees no request cluster-limit rejected: it holds 20.
	const ipKey, userKey = "cl:cluster-limit@file:{127.0.0.1}", "cl:cluster-user@file:{alice}"
	found, counts := redistest.ClusterCounts(t, nodes, "cl:*")
	if len(found) != 2 || counts[ipKey] == 0 || counts[userKey] == 0 {
		t.Fatalf("keys in the cluster: %v, want %s and %s", found, ipKey, userKey)
	}
	if counts[ipKey] != 20 || counts[userKey] != 20 {
		t.Fatalf("%s holds %d, %s holds %d, want 20 each", ipKey, counts[ipKey], userKey, counts[userKey])
	}
	for _, tr := range []*traefiktest.Traefik{a, b} {
		if lines := tr.LogLines(`windowlimit: error: redis `); len(lines) > 0 {
			t.Errorf("%v logged errors of the cluster: %q", tr, lines)
		}
	}
	t.Logf("20 x 200 of 22 alternating, then 429; keys %v", found)
}
