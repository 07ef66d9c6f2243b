//go:build !race

package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
		req, resp := get(t, alternate(n, a, b).url(path), header...)
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
		// Start early in a 10 s sub-window (Redis's, on this machine's
		// clock), so that no lease ends, giving back, during the burst.
		waitFor(t, "the first half of a 10 s sub-window", func() (bool, string) {
			return time.Now().Unix()%10 < 5, time.Now().Format(time.StampMilli)
		})
		calls0 := rds.ScriptCalls(t)
		statuses := make([]int, 100)
		var wg sync.WaitGroup
		next := make(chan int)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if resp, err := client.Get(alternate(i+1, a, b).url("/hot")); err == nil {
						resp.Body.Close()
						statuses[i] = resp.StatusCode
					}
				}
			}()
		}
		for i := range statuses {
			next <- i
		}
		close(next)
		wg.Wait()
		calls := rds.ScriptCalls(t) - calls0
		held := rds.StoredCount(t, "hot:hot:{127.0.0.1}")
		ok, answered := 0, 0
		for _, s := range statuses {
			if s != 0 {
				answered++
			}
			if s == 200 {
				ok++
			}
		}
		summary := fmt.Sprintf("100 GETs of /hot alternating, 8 at a time: %d answered, %d x 200 (limit 60), %d script calls; Redis counts %d", answered, ok, calls, held)
		if answered != 100 || ok > 60 || held != 60 || calls >= 100 {
			t.Fatalf("%s; want 100 answered, at most 60 x 200, Redis counting 60 (the burst passed the limit: the leases count too), fewer script calls than requests", summary)
		}
		// The sub-window ends: every lease gives back what it did not
		// spend.
		time.Sleep(time.Duration(10-time.Now().Unix()%10)*time.Second + 500*time.Millisecond)
		if count := rds.StoredCount(t, "hot:hot:{127.0.0.1}"); count != int64(ok) {
			t.Fatalf("%s; once the leases ended Redis counts %d, want the %d admitted: unspent units not given back", summary, count, ok)
		}
		t.Log(summary)
	})
	checkOverrides(t, a, b)
	checkTiers(t, a, b)
	t.Run("count_status 401 counts only the 401s", func(t *testing.T) {
		positive := regexp.MustCompile(`^[1-9][0-9]*$`)
		for n := 1; n <= 13; n++ {
			c := alternate(n, a, b)
			switch {
			case n <= 6:
				if req, resp := get(t, c.url("/login"), "X-Status", "200"); resp.Status != 200 {
					t.Fatalf("request %d (a 200): %v: %v, want 200", n, req, resp)
				}
			case n <= 11:
				if req, resp := get(t, c.url("/login"), "X-Status", "401"); resp.Status != 401 || resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(11-n) {
					t.Fatalf("failed login %d: %v: %v, want 401 with remaining %d", n-6, req, resp, 11-n)
				}
			default:
				if req, resp := get(t, c.url("/login"), "X-Status", "200"); resp.Status != 429 || !positive.MatchString(resp.Header.Get("Retry-After")) {
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
		if req, resp := get(t, a.url("/deny"), "X-Key", "deny-up"); resp.Status != 200 {
			t.Fatalf("redis up: %v: %v, want 200", req, resp)
		}
		// 300 requests, 8 at a time, each on its own key (so none is over
		// the limit); Redis is killed after the 50th answer.
		type answer struct{ status, reset string }
		answers := make(chan answer, 300)
		next := make(chan int)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					req, _ := http.NewRequest(http.MethodGet, a.url("/chaos"), nil)
					req.Header.Set("X-Key", "load-"+strconv.Itoa(i))
					resp, err := client.Do(req)
					if err != nil {
						answers <- answer{"error", ""}
						continue
					}
					resp.Body.Close()
					answers <- answer{strconv.Itoa(resp.StatusCode), resp.Header.Get("X-RateLimit-Reset")}
				}
			}()
		}
		go func() {
			for i := 1; i <= 300; i++ {
				next <- i
			}
			close(next)
		}()
		var got []answer
		for len(got) < 50 {
			got = append(got, <-answers)
		}
		atKill := len(got)
		rds.Kill()
		wg.Wait()
		close(answers)
		for ans := range answers {
			got = append(got, ans)
		}
		ok, fives, counted := 0, 0, 0
		var statuses []string
		for _, ans := range got {
			statuses = append(statuses, ans.status)
			switch {
			case ans.status == "200" && ans.reset == "0":
				policy++
				ok++
			case ans.status == "200":
				counted++
				ok++
			case strings.HasPrefix(ans.status, "5"):
				fives++
			}
		}
		summary := fmt.Sprintf("300 GETs of /chaos on instance a, 8 at a time, redis killed after %d answers: %s (%d counted in redis, %d answered by the allow policy)",
			atKill, tally(statuses), counted, policy)
		if len(got) != 300 || fives != 0 || ok != 300 {
			t.Fatalf("%s; want 300 x 200, no 5xx", summary)
		}
		if counted == 0 || policy == 0 {
			t.Fatalf("%s; want some of each: the kill did not land during the load", summary)
		}
		req, resp := get(t, a.url("/deny"), "X-Key", "deny-down")
		if resp.Status != 429 || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("redis down: %v: %v, want 429 with Retry-After 1", req, resp)
		}
		t.Log(summary)
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
		t0 := time.Now()
		rds.Restart()
		up := time.Since(t0)
		// The breaker probes every 250 ms through a fresh client, which
		// takes over once it gets an answer. Each poll sends a fresh key
		// to a, then to b: b answers Remaining 18 only when both were
		// counted in one store, which can only be Redis.
		var log []string
		var atA, atB time.Duration
		positive := regexp.MustCompile(`^[1-9]`)
		for poll := 1; ; poll++ {
			key := "recover-" + strconv.Itoa(poll)
			_, ra := get(t, a.url("/chaos"), "X-Key", key)
			if atA == 0 && positive.MatchString(ra.Header.Get("X-RateLimit-Reset")) {
				atA = time.Since(t0)
			}
			_, rb := get(t, b.url("/chaos"), "X-Key", key)
			if atB == 0 && positive.MatchString(rb.Header.Get("X-RateLimit-Reset")) {
				atB = time.Since(t0)
			}
			log = append(log, fmt.Sprintf("%.2f s: poll %d: a %v; b %v", time.Since(t0).Seconds(), poll, ra, rb))
			if ra.Status != 200 || rb.Status != 200 {
				t.Fatalf("recovery poll %d: want 200 from both:\n%s", poll, strings.Join(log, "\n"))
			}
			if rb.Header.Get("X-RateLimit-Remaining") == "18" {
				break
			}
			if time.Since(t0) > 5*time.Second {
				t.Fatalf("the two instances did not share a count within 5 s of the restart:\n%s", strings.Join(log, "\n"))
			}
		}
		rec := time.Since(t0)
		if rec > time.Second {
			t.Fatalf("the shared limit came back %.2f s after the restart, want <= 1 s:\n%s", rec.Seconds(), strings.Join(log, "\n"))
		}
		checkShared(t, a, b, "/chaos", "X-Key", "after")
		if n := rds.StoredCount(t, "chaos:chaos:{after}"); n != 20 {
			t.Fatalf("chaos:chaos:{after} holds %d in redis, want 20", n)
		}
		i := 0
		waitWithin(t, 2*time.Second, "the deny zone to admit again", func() (bool, string) {
			i++
			req, resp := get(t, a.url("/deny"), "X-Key", "deny-after-"+strconv.Itoa(i))
			return resp.Status == 200, fmt.Sprintf("%v: %v", req, resp)
		})
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
	var found []string
	counts := map[string]int64{}
	for _, addr := range nodes {
		node := redistest.Node(t, addr)
		for _, k := range node.Keys(t, "cl:*") {
			found = append(found, k+"@"+addr)
			counts[k] = node.StoredCount(t, k)
		}
	}
	if len(found) != 2 || len(counts) != 2 || counts[ipKey] == 0 || counts[userKey] == 0 {
		t.Fatalf("keys in the cluster: %v, want %s and %s", found, ipKey, userKey)
	}
	if counts[ipKey] != 20 || counts[userKey] < 20 || counts[userKey] > 22 {
		t.Fatalf("%s holds %d (want 20), %s holds %d (want 20..22)", ipKey, counts[ipKey], userKey, counts[userKey])
	}
	noRedisErrors(t, a, b)
	t.Logf("20 x 200 of 22 alternating, then 429; keys %v (%s = %d, %s = %d)", found, ipKey, counts[ipKey], userKey, counts[userKey])
}
