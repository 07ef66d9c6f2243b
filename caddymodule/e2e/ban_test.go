//go:build !race

package e2e

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/redistest"
)

// banSite is the site of TestE2EBan: /login limits each X-User to 3
// requests per 2 s and bans one that reaches it for 6 s; /plain is the
// same limit without a ban, the window alone. The store is memory,
// persisted every second, or a Redis.
const banSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
}
:{{.Web}} {
	bind 127.0.0.1
	handle /login {
		rate_limit {
			zone login {
				key        {http.request.header.X-User}
				window     2s
				sub_window 200ms
				limit      3
				ban        6s
			}
			{{.Store}}
		}
		respond "welcome"
	}
	handle /plain {
		rate_limit {
			zone plain {
				key        {http.request.header.X-User}
				window     2s
				sub_window 200ms
				limit      3
			}
			{{.Store}}
		}
		respond "plain"
	}
}
`

// banStoreMemory is banSite's store for memory: persisted every second.
const banStoreMemory = "persist {\n\t\t\t\tinterval 1s\n\t\t\t}"

// banUntil matches the admin API's banned_until of a key.
var banUntil = regexp.MustCompile(`"banned_until":"([^"]+)"`)

// expect sends a GET of path as user to c and fails unless it gets
// status; it returns the response.
func expect(t *testing.T, c *caddy, path, user string, status int, why string) e2etest.Response {
	t.Helper()
	req, resp := e2etest.Get(t, c.url(path), "X-User", user)
	if resp.Status != status {
		t.Fatalf("%s: %v: %v, want %d", why, req, resp, status)
	}
	return resp
}

// banOf starts the ban of user through c: 3 x 200 on /login, and on
// /plain, then a 429 with Retry-After 6 on /login. It returns when.
func banOf(t *testing.T, c *caddy, user string) time.Time {
	t.Helper()
	for n := 1; n <= 3; n++ {
		expect(t, c, "/login", user, 200, "request "+strconv.Itoa(n))
		expect(t, c, "/plain", user, 200, "request "+strconv.Itoa(n)+" without a ban")
	}
	at := time.Now()
	resp := expect(t, c, "/login", user, 429, "the 4th request")
	if ra := resp.Header.Get("Retry-After"); ra != "6" {
		t.Fatalf("the 4th request: Retry-After %q, want the ban's 6", ra)
	}
	return at
}

// sleepUntil waits until at: the test is about time passing.
func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// TestE2EBan runs the case through real Caddy: limit 3 per 2 s,
// ban 6 s. In memory, one instance: refused 3 s later where the window
// alone admits, the ban in the admin API and the metric, kept across a
// restart with persist, lifted by a DELETE, and over after 6 s. With
// Redis, two instances: a ban set through one is honoured by the other,
// and a DELETE on either lifts it for both.
func TestE2EBan(t *testing.T) {
	t.Parallel() // it mostly waits for the ban to end

	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		c := newCaddy(t)
		c.render(banSite, map[string]any{"Store": banStoreMemory})
		c.start()
		began := banOf(t, c, "alice")
		banOf(t, c, "bob")

		sleepUntil(began.Add(3 * time.Second))
		expect(t, c, "/plain", "alice", 200, "3 s on, the window alone")
		resp := expect(t, c, "/login", "alice", 429, "3 s on, banned")
		if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 1 || ra > 3 {
			t.Fatalf("3 s on: Retry-After %q, want the ban's end, 3 s or less", resp.Header.Get("Retry-After"))
		}
		if r := resp.Header.Get("X-RateLimit-Reset"); r != resp.Header.Get("Retry-After") {
			t.Fatalf("3 s on: X-RateLimit-Reset %q, want the ban's end as Retry-After %q", r, resp.Header.Get("Retry-After"))
		}
		req, view := admin(t, c, http.MethodGet, "/rate_limit/login/alice")
		m := banUntil.FindStringSubmatch(view.Body)
		if m == nil {
			t.Fatalf("%v: %v, want banned_until", req, view)
		}
		if end, err := time.Parse(time.RFC3339, m[1]); err != nil || end.Before(began.Add(5*time.Second)) || end.After(began.Add(8*time.Second)) {
			t.Fatalf("banned_until %s, want about %s", m[1], began.Add(6*time.Second).UTC().Format(time.RFC3339))
		}
		if req, list := admin(t, c, http.MethodGet, "/rate_limit/login"); !strings.Contains(list.Body, `"ban":"6s"`) {
			t.Fatalf("%v: %v, want the zone's \"ban\":\"6s\"", req, list)
		}
		if n, _ := metric(t, c, `caddy_http_rate_limit_bans_total{zone="login"}`); n != 2 {
			t.Fatalf("bans_total %v, want 2:\n%s", n, metricLines(t, c, "bans"))
		}

		c.stop(syscall.SIGTERM) // a graceful stop saves the zone
		c.start()
		expect(t, c, "/login", "alice", 429, "after a restart with persist")
		expect(t, c, "/plain", "carol", 200, "after the restart, another user")

		if req, resp := admin(t, c, http.MethodDelete, "/rate_limit/login/alice"); resp.Status != 200 {
			t.Fatalf("%v: %v, want 200", req, resp)
		}
		expect(t, c, "/login", "alice", 200, "after the DELETE")

		if time.Since(began) > 6*time.Second {
			t.Fatalf("the checks took %v, past the ban: bob's check proves nothing", time.Since(began))
		}
		expect(t, c, "/login", "bob", 429, "bob, before the ban's end")
		sleepUntil(began.Add(6*time.Second + 300*time.Millisecond))
		expect(t, c, "/login", "bob", 200, "bob, after the ban's end")
	})

	t.Run("redis, two instances", func(t *testing.T) {
		t.Parallel()
		rds := redistest.Start(t)
		a, b := newCaddy(t), newCaddy(t)
		for _, c := range []*caddy{a, b} {
			c.render(banSite, map[string]any{"Store": "store redis " + rds.Addr()})
			c.start()
		}
		began := banOf(t, a, "alice")
		banOf(t, a, "bob")
		if ks := rds.Keys(t, "*login:{alice}:ban"); len(ks) != 1 {
			t.Fatalf("redis keys %v, want the ban key ...login:{alice}:ban", ks)
		}
		sleepUntil(began.Add(3 * time.Second))
		expect(t, b, "/plain", "alice", 200, "3 s on, the window alone, instance b")
		expect(t, b, "/login", "alice", 429, "3 s on, instance b honours a's ban")
		if _, view := admin(t, b, http.MethodGet, "/rate_limit/login/alice"); !banUntil.MatchString(view.Body) {
			t.Fatalf("instance b's admin API: %v, want banned_until", view)
		}
		if req, resp := admin(t, b, http.MethodDelete, "/rate_limit/login/alice"); resp.Status != 200 {
			t.Fatalf("%v: %v, want 200", req, resp)
		}
		expect(t, a, "/login", "alice", 200, "instance a, after b's DELETE")
		expect(t, b, "/login", "bob", 429, "bob on b, before the ban's end")
		sleepUntil(began.Add(6*time.Second + 300*time.Millisecond))
		expect(t, b, "/login", "bob", 200, "bob on b, after the ban's end")
		noRedisErrors(t, a, b)
	})
}

// banLoginSite is the login of TestE2EBanCountStatus: /login answers 401
// to a wrong X-Password and 200 otherwise; only the 401s count, 3 per
// 2 s a user, and a user who reaches 3 is banned for 6 s. Two instances
// share the Redis.
const banLoginSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
}
:{{.Web}} {
	bind 127.0.0.1
	handle /login {
		rate_limit {
			zone login {
				key          {http.request.header.X-User}
				window       2s
				sub_window   200ms
				limit        3
				count_status 401
				ban          6s
			}
			store redis {{.Redis}}
		}
		@wrong header X-Password wrong
		respond @wrong "no" 401
		respond "welcome"
	}
}
`

// login sends a GET of /login as user with password to c and fails
// unless it gets status.
func login(t *testing.T, c *caddy, user, password string, status int, why string) e2etest.Response {
	t.Helper()
	req, resp := e2etest.Get(t, c.url("/login"), "X-User", user, "X-Password", password)
	if resp.Status != status {
		t.Fatalf("%s: %v: %v, want %d", why, req, resp, status)
	}
	return resp
}

// TestE2EBanCountStatus is the login the issue names, through two real
// Caddy on one Redis: successful logins count nothing; 3 failed ones
// (count_status 401) ban the user's next attempt, right password or not,
// on both instances, past the window's 2 s, until the ban's 6 s end.
func TestE2EBanCountStatus(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	a, b := newCaddy(t), newCaddy(t)
	for _, c := range []*caddy{a, b} {
		c.render(banLoginSite, map[string]any{"Redis": rds.Addr()})
		c.start()
	}
	for n := 1; n <= 5; n++ {
		login(t, a, "alice", "right", 200, "successful login "+strconv.Itoa(n)+" (not counted)")
	}
	for n := 1; n <= 3; n++ {
		login(t, []*caddy{a, b}[n%2], "alice", "wrong", 401, "failed login "+strconv.Itoa(n))
	}
	began := time.Now()
	resp := login(t, a, "alice", "right", 429, "the attempt after 3 failed logins")
	if ra := resp.Header.Get("Retry-After"); ra != "6" {
		t.Fatalf("the attempt after 3 failed logins: Retry-After %q, want the ban's 6", ra)
	}
	login(t, b, "bob", "right", 200, "another user")
	sleepUntil(began.Add(3 * time.Second))
	login(t, b, "alice", "right", 429, "3 s on, past the window: instance b honours the ban")
	sleepUntil(began.Add(6*time.Second + 300*time.Millisecond))
	login(t, b, "alice", "right", 200, "after the ban's end")
	noRedisErrors(t, a, b)
}
