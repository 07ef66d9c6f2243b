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
		req, resp := traefiktest.Get(t, alternate(n, a, b).URL(path), header...)
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
	be := traefiktest.StartBackend(t)
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
		const key = "hot:hot-limit@file:{127.0.0.1}"
		// Start early in a 10 s sub-window (Redis's, on this machine's
		// clock), so that no lease ends, giving back, during the burst.
		traefiktest.WaitFor(t, 11*time.Second, "the first half of a 10 s sub-window", func() (bool, string) {
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
					if resp, err := traefiktest.Send(traefiktest.Request{URL: alternate(i+1, a, b).URL("/hot")}); err == nil {
						statuses[i] = resp.Status
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
		held := rds.StoredCount(t, key)
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
		// spend. A sleep, not a poll: the count must be the admitted
		// after that moment, and may already be before it.
		time.Sleep(time.Duration(10-time.Now().Unix()%10)*time.Second + 500*time.Millisecond)
		if count := rds.StoredCount(t, key); count != int64(ok) {
			t.Fatalf("%s; once the leases ended Redis counts %d, want the %d admitted: unspent units not given back", summary, count, ok)
		}
		t.Log(summary)
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
	be := traefiktest.StartBackend(t)
	rds := redistest.Start(t)
	a, b := twoInstances(t, "fixtures/redis/dynamic.yml", map[string]any{"Backend": be.URL(), "Redis": rds.Addr()})

	t.Run("redis killed under load: allowed by the policy, denied by deny", func(t *testing.T) {
		if req, resp := traefiktest.Get(t, a.URL("/deny"), "X-Key", "deny-up"); resp.Status != 200 {
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
					resp, err := traefiktest.Send(traefiktest.Request{URL: a.URL("/chaos"), Header: []string{"X-Key", "load-" + strconv.Itoa(i)}})
					if err != nil {
						answers <- answer{"error", ""}
						continue
					}
					answers <- answer{strconv.Itoa(resp.Status), resp.Header.Get("X-RateLimit-Reset")}
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
		ok, fives, counted, policy := 0, 0, 0, 0
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
		summary := fmt.Sprintf("300 GETs of /chaos on instance a, 8 at a time, each its own X-Key, redis killed after %d answers: %s (%d counted in redis, %d answered by the allow policy)",
			atKill, tally(statuses), counted, policy)
		if len(got) != 300 || fives != 0 || ok != 300 {
			t.Fatalf("%s; want 300 x 200, no 5xx", summary)
		}
		if counted == 0 || policy == 0 {
			t.Fatalf("%s; want some of each: the kill did not land during the load", summary)
		}
		req, resp := traefiktest.Get(t, a.URL("/deny"), "X-Key", "deny-down")
		if resp.Status != 429 || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("redis down: %v: %v, want 429 with Retry-After 1", req, resp)
		}
		t.Log(summary)
	})
	t.Run("redis restarted: one shared count again within 1 s", func(t *testing.T) {
		t0 := time.Now()
		rds.Restart()
		up := time.Since(t0)
		// Each poll sends a fresh key to a, then to b: b answers
		// Remaining 18 only when both were counted in one store, which can
		// only be Redis (the allow policy answers Remaining 19, Reset 0).
		var log []string
		var atA, atB time.Duration
		first := regexp.MustCompile(`^[1-9]`)
		for poll := 1; ; poll++ {
			key := "recover-" + strconv.Itoa(poll)
			_, ra := traefiktest.Get(t, a.URL("/chaos"), "X-Key", key)
			if atA == 0 && first.MatchString(ra.Header.Get("X-RateLimit-Reset")) {
				atA = time.Since(t0)
			}
			_, rb := traefiktest.Get(t, b.URL("/chaos"), "X-Key", key)
			if atB == 0 && first.MatchString(rb.Header.Get("X-RateLimit-Reset")) {
				atB = time.Since(t0)
			}
			log = append(log, fmt.Sprintf("%.2f s: poll %d (X-Key %s): a %v; b %v", time.Since(t0).Seconds(), poll, key, ra, rb))
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
		if n := rds.StoredCount(t, "chaos:chaos-limit@file:{after}"); n != 20 {
			t.Fatalf("chaos:chaos-limit@file:{after} holds %d in redis, want 20", n)
		}
		i := 0
		traefiktest.WaitFor(t, 2*time.Second, "the deny middleware to admit again", func() (bool, string) {
			i++
			req, resp := traefiktest.Get(t, a.URL("/deny"), "X-Key", "deny-after-"+strconv.Itoa(i))
			return resp.Status == http.StatusOK, fmt.Sprintf("%v: %v", req, resp)
		})
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
	be := traefiktest.StartBackend(t)
	nodes := redistest.Cluster(t)
	a, b := twoInstances(t, "fixtures/redis/cluster.yml", map[string]any{"Backend": be.URL(), "Nodes": nodes})
	checkShared(t, a, b, "/cluster", "X-User", "alice")

	// cluster-user sees no request cluster-limit rejected: it holds 20.
	const ipKey, userKey = "cl:cluster-limit@file:{127.0.0.1}", "cl:cluster-user@file:{alice}"
	var found []string
	counts := map[string]int64{}
	for _, addr := range nodes {
		node := redistest.Node(t, addr)
		for _, k := range node.Keys(t, "cl:*") {
			found = append(found, k+"@"+addr)
			counts[k] = node.StoredCount(t, k)
		}
	}
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
