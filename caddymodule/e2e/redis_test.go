//go:build !race

package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/redistest"
)

// redisSite is one of the two instances of TestE2ERedisShared and
// TestE2ERedisChaos, every zone in one redis-server: / (e2e, limit 20, no
// leases, store errors denied), /hot (leases on), /tiers and /internal
// (TestE2EOverridesAndTiers's zones), /login (count_status 401), and
// /chaos and /deny keyed by X-Key, store errors allowed and denied.
const redisSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
}
:{{.Web}} {
	bind 127.0.0.1
	handle /chaos {
		rate_limit {
			zone chaos {
				key {http.request.header.X-Key}
				window 1m
				limit 20
			}
			store redis {
				address {{.Redis}}
				key_prefix chaos:
				lease off
			}
		}
		respond "chaos"
	}
	handle /tiers {
		map {header.X-API-Key} {plan_limit} {
			silver-key 4
			broken-key oops
			default    2
		}
		rate_limit {
			zone tiers {
				key      {http.request.header.X-API-Key}
				window   1m
				limit    {plan_limit}
				override gold-key 600
				override 10.0.0.0/8 unlimited
			}
			store redis {
				address {{.Redis}}
				key_prefix tiers:
			}
		}
		respond "tiers"
	}
	handle /internal {
		rate_limit {
			zone internal {
				key      {http.request.header.X-API-Key}
				window   1m
				limit    2
				override 127.0.0.0/8 unlimited
			}
			store redis {
				address {{.Redis}}
				key_prefix internal:
			}
		}
		respond "internal"
	}
	handle /login {
		rate_limit {
			zone login {
				window 15m
				limit 5
				count_status 401
			}
			store redis {
				address {{.Redis}}
				key_prefix login:
			}
		}
		@fail header X-Status 401
		respond @fail "wrong password" 401
		respond "welcome"
	}
	handle /deny {
		rate_limit {
			zone deny {
				key {http.request.header.X-Key}
				window 1m
				limit 20
			}
			store redis {
				address {{.Redis}}
				key_prefix deny:
			}
			on_store_error deny
		}
		respond "deny"
	}
	handle /hot {
		rate_limit {
			zone hot {
				window 1m
				sub_window 10s
				limit 60
			}
			store redis {
				address {{.Redis}}
				key_prefix hot:
			}
		}
		respond "hot"
	}
	handle {
		rate_limit {
			zone e2e {
				window 1m
				limit 20
			}
			store redis {
				address {{.Redis}}
				key_prefix e2e:
				lease off
			}
			on_store_error deny
		}
		respond "ok"
	}
}
`

// twoInstances starts two instances of site sharing the redis-server (or
// cluster nodes) of redis.
func twoInstances(t *testing.T, site, redis string) (a, b *caddy) {
	t.Helper()
	a, b = newCaddy(t), newCaddy(t)
	for _, c := range []*caddy{a, b} {
		c.render(site, map[string]any{"Redis": redis})
		c.start()
	}
	return a, b
}

// checkShared sends 22 requests alternating between a and b: exactly 20 x
// 200, X-RateLimit-Remaining 19..0 across both and X-RateLimit-Reset > 0
// (counted in Redis: the allow policy answers Reset 0), then 429 with
// Retry-After.
func checkShared(t *testing.T, a, b *caddy, path string, header ...string) {
	t.Helper()
	positive := regexp.MustCompile(`^[1-9][0-9]*$`)
	for n := 1; n <= 22; n++ {
		name := map[bool]string{true: "a", false: "b"}[n%2 == 1]
		req, resp := e2etest.Get(t, alternate(n, a, b).url(path), header...)
		if n <= 20 {
			if resp.Status != 200 || resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(20-n) ||
				!positive.MatchString(resp.Header.Get("X-RateLimit-Reset")) {
				t.Fatalf("request %d (instance %s): %v: %v [X-RateLimit-Reset: %s], want 200, remaining %d (one count) and a reset > 0 (counted in Redis)",
					n, name, req, resp, resp.Header.Get("X-RateLimit-Reset"), 20-n)
			}
		} else if resp.Status != 429 || !positive.MatchString(resp.Header.Get("Retry-After")) {
			t.Fatalf("request %d (instance %s): %v: %v, want 429 with Retry-After", n, name, req, resp)
		}
	}
}

// noRedisErrors fails when an instance logged a Redis error.
func noRedisErrors(t *testing.T, cs ...*caddy) {
	t.Helper()
	for i, c := range cs {
		for _, line := range strings.Split(c.logText(), "\n") {
			if strings.Contains(strings.ToLower(line), "redis store failed") {
				t.Errorf("instance %d logged a redis error: %s", i+1, line)
			}
		}
	}
}

// TestE2ERedisShared runs two instances on one redis-server: one limit
// shared, leases that give back what they did not spend, overrides and
// tiers, and count_status.
func TestE2ERedisShared(t *testing.T) {
	t.Parallel() // it mostly waits: sub-windows, slow answers, intervals
	rds := redistest.Start(t)
	a, b := twoInstances(t, redisSite, rds.Addr())

	t.Run("one limit of 20 a minute across two instances", func(t *testing.T) {
		checkShared(t, a, b, "/")
		if got := rds.Keys(t, "e2e:*"); strings.Join(got, " ") != "e2e:e2e:{127.0.0.1}" {
			t.Errorf("KEYS e2e:*: %q, want e2e:e2e:{127.0.0.1}", got)
		}
		noRedisErrors(t, a, b)
	})
	t.Run("leases spare script calls and give back what they did not spend", func(t *testing.T) {
		e2etest.LeasesGiveBack(t, rds, "hot:hot:{127.0.0.1}", a.url("/hot"), b.url("/hot"))
	})
	checkOverrides(t, a, b)
	checkTiers(t, a, b)
	t.Run("count_status 401 counts only the 401s", func(t *testing.T) {
		positive := regexp.MustCompile(`^[1-9][0-9]*$`)
		for n := 1; n <= 13; n++ {
			c := alternate(n, a, b)
			switch {
			case n <= 6:
				if req, resp := e2etest.Get(t, c.url("/login"), "X-Status", "200"); resp.Status != 200 {
					t.Fatalf("request %d (a 200): %v: %v, want 200", n, req, resp)
				}
			case n <= 11:
				if req, resp := e2etest.Get(t, c.url("/login"), "X-Status", "401"); resp.Status != 401 || resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(11-n) {
					t.Fatalf("failed login %d: %v: %v, want 401 with remaining %d", n-6, req, resp, 11-n)
				}
			default:
				if req, resp := e2etest.Get(t, c.url("/login"), "X-Status", "200"); resp.Status != 429 || !positive.MatchString(resp.Header.Get("Retry-After")) {
					t.Fatalf("request %d after 5 failures: %v: %v, want 429 with Retry-After", n, req, resp)
				}
			}
		}
		if got := rds.Keys(t, "login:*"); strings.Join(got, " ") != "login:login:{127.0.0.1}" {
			t.Errorf("KEYS login:*: %q, want login:login:{127.0.0.1}", got)
		}
	})
}

// TestE2ERedisChaos kills the redis-server (SIGKILL) under load and
// restarts it: with the default on_store_error allow every request is
// answered 200, none 5xx, a zone with on_store_error deny answers 429 with
// Retry-After: 1 meanwhile, and once Redis is back the two instances count
// one limit again within 1 s.
func TestE2ERedisChaos(t *testing.T) {
	rds := redistest.Start(t)
	a, b := twoInstances(t, redisSite, rds.Addr())

	var policy int
	t.Run("redis killed under load: allowed by the policy, denied by deny", func(t *testing.T) {
		policy = e2etest.ChaosLoad(t, a.url("/chaos"), a.url("/deny"), rds.Kill)
	})
	t.Run("the metrics count the fallbacks and the open breaker", func(t *testing.T) {
		fallbacks, _ := metric(t, a, "caddy_http_rate_limit_store_fallbacks_total")
		open, _ := metric(t, a, "caddy_http_rate_limit_store_breakers_open")
		if fallbacks < float64(policy+1) || open < 1 {
			t.Fatalf("store_fallbacks_total %v (want >= %d), store_breakers_open %v (want >= 1) while redis is down; metrics:\n%s",
				fallbacks, policy+1, open, metricLines(t, a, "store_"))
		}
	})
	t.Run("redis restarted: one shared count again within 1 s", func(t *testing.T) {
		// The breaker probes every 250 ms through a fresh client, which
		// takes over once it gets an answer.
		rec, up, atA, atB := e2etest.SharedAgain(t, rds.Restart, a.url("/chaos"), b.url("/chaos"))
		checkShared(t, a, b, "/chaos", "X-Key", "after")
		if n := rds.StoredCount(t, "chaos:chaos:{after}"); n != 20 {
			t.Fatalf("chaos:chaos:{after} holds %d in redis, want 20", n)
		}
		e2etest.AdmitsAgain(t, a.url("/deny"))
		if !a.logged("redis store failed") || !a.logged("redis store answers again") {
			t.Errorf("instance a logged no redis error or no recovery (want \"redis store failed\" and \"redis store answers again\")")
		}
		t.Logf("recovered in %.2f s (redis up after %.2f s, a counting in it after %.2f s, b after %.2f s); then 20 x 200 alternating on a fresh key, 429, and 20 in redis",
			rec.Seconds(), up.Seconds(), atA.Seconds(), atB.Seconds())
	})
}

// clusterSite is one of the two instances of TestE2ERedisCluster: two
// zones on different keys (the client's address and X-User), so in
// different slots.
const clusterSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
}
:{{.Web}} {
	bind 127.0.0.1
	rate_limit {
		zone ip {
			window 1m
			limit 20
		}
		zone user {
			key {http.request.header.X-User}
			window 1m
			limit 1000
		}
		store redis {
			addresses {{.Redis}}
			key_prefix cl:
		}
		on_store_error deny
	}
	respond "ok"
}
`

// TestE2ERedisCluster runs two instances on a three-master Redis Cluster
// (scripts/redis-cluster.sh): exactly 20 x 200 across them, then 429, and
// both keys in the cluster.
func TestE2ERedisCluster(t *testing.T) {
	t.Parallel() // it mostly waits: sub-windows, slow answers, intervals
	nodes := redistest.Cluster(t)
	a, b := twoInstances(t, clusterSite, strings.Join(nodes, " "))
	checkShared(t, a, b, "/", "X-User", "alice")

	const ipKey, userKey = "cl:ip:{127.0.0.1}", "cl:user:{alice}"
	found, counts := redistest.ClusterCounts(t, nodes, "cl:*")
	if len(found) != 2 || len(counts) != 2 || counts[ipKey] == 0 || counts[userKey] == 0 {
		t.Fatalf("keys in the cluster: %v, want %s and %s", found, ipKey, userKey)
	}
	if counts[ipKey] != 20 || counts[userKey] < 20 || counts[userKey] > 22 {
		t.Fatalf("%s holds %d (want 20), %s holds %d (want 20..22)", ipKey, counts[ipKey], userKey, counts[userKey])
	}
	noRedisErrors(t, a, b)
	t.Logf("20 x 200 of 22 alternating, then 429; keys %v (%s = %d, %s = %d)", found, ipKey, counts[ipKey], userKey, counts[userKey])
}
