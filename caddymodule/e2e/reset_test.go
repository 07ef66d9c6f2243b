//go:build !race

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// resetSite is one instance of TestE2EReset: /big-d and /big-l are hot
// keys' zones in Redis (resetd reset by the admin DELETE, resetl in Redis),
// /cs-mem/ and /cs-redis/ zones of limit 5 counting 401s in front of the
// backend; all keyed by the client's address.
const resetSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
}
:{{.Web}} {
	bind 127.0.0.1
{{- range $z := .Big}}
	handle /big-{{$z}} {
		rate_limit {
			zone reset{{$z}} {
				window 1m
				limit {{$.Limit}}
			}
			store redis {
				address {{$.Redis}}
				key_prefix rst:
			}
		}
		respond "ok"
	}
{{- end}}
	handle /cs-mem/* {
		rate_limit {
			zone csmem {
				window 1m
				limit 5
				count_status 401
			}
		}
		reverse_proxy {{.Backend}}
	}
	handle /cs-redis/* {
		rate_limit {
			zone csredis {
				window 1m
				limit 5
				count_status 401
			}
			store redis {
				address {{.Redis}}
				key_prefix rst:
			}
		}
		reverse_proxy {{.Backend}}
	}
}
`

const (
	resetLimit = 3000            // the hot keys' limit a minute
	resetSub   = 6 * time.Second // their sub-window: sub_window's default, W/10
)

// resetEnv is what TestE2EReset's checks share: two instances on one
// redis-server.
type resetEnv struct {
	a, b *caddy
	rds  *redistest.Server
}

// held returns the units of the two instances' leases on the key
// 127.0.0.1 of zone, as their admin APIs show them, and a description.
func (e *resetEnv) held(t *testing.T, zone string) (a, b int, text string) {
	t.Helper()
	units := func(c *caddy) int {
		req, resp := admin(t, c, http.MethodGet, "/rate_limit/"+zone+"/127.0.0.1")
		var v struct {
			States []struct {
				Lease *struct {
					Units int `json:"units"`
				} `json:"lease"`
			} `json:"states"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &v); err != nil {
			t.Fatalf("%v: %v: %v", req, resp, err)
		}
		n := 0
		for _, s := range v.States {
			if s.Lease != nil {
				n += s.Lease.Units
			}
		}
		return n
	}
	a, b = units(e.a), units(e.b)
	return a, b, fmt.Sprintf("%d units leased (instance a %d, b %d)", a+b, a, b)
}

// burstResult is what scripts/e2e/burst counted.
type burstResult struct {
	ok, total, errors int
	tally             string
}

// burst sends n requests to urls in turn, c at a time, all ended by
// deadline.
func burst(t *testing.T, n, c int, deadline time.Duration, urls ...string) burstResult {
	t.Helper()
	args := []string{"-urls", strings.Join(urls, ","), "-n", strconv.Itoa(n), "-c", strconv.Itoa(c), "-deadline", deadline.String()}
	lines, stderr := run(t, program(t, "burst"), deadline+10*time.Second, args...)
	if stderr != "" {
		t.Fatalf("burst %s: %s", strings.Join(args, " "), stderr)
	}
	var r burstResult
	var parts []string
	for _, l := range lines {
		status, count, _ := strings.Cut(l, " ")
		k, _ := strconv.Atoi(count)
		r.total += k
		switch status {
		case "200":
			r.ok = k
		case "error":
			r.errors = k
		}
		parts = append(parts, status+" x "+count)
	}
	r.tally = strings.Join(parts, ", ")
	return r
}

// subWindowStart waits, at most one sub-window, until the current
// sub-window (on this machine's clock, which the redis-server shares)
// started less than half a second ago: a warm-up then runs and its leases
// are inspected and reset within one sub-window, before any lease ends.
func subWindowStart(t *testing.T) {
	t.Helper()
	waitWithin(t, resetSub+time.Second, "the start of a sub-window", func() (bool, string) {
		since := time.Duration(time.Now().UnixNano() % int64(resetSub))
		return since < 500*time.Millisecond, since.String() + " into the sub-window"
	})
}

// resetLeases warms up a hot key on urlA and urlB (one zone on the two
// instances) until both hold a lease, resets it with reset, and at once
// sends 4 x the limit, 16 at a time, alternating. With lost false (the
// admin DELETE) the window after admits at most the limit and at least
// nine tenths of it; with lost true (the key deleted in Redis) at most the
// limit plus what the leases held at the reset.
func (e *resetEnv) resetLeases(t *testing.T, zone string, lost bool, reset func(), urlA, urlB string) {
	t.Helper()
	var warm burstResult
	var calls int64
	var heldUnits int
	var heldText string
	for try := 1; ; try++ {
		subWindowStart(t)
		calls0 := e.rds.ScriptCalls(t)
		warm = burst(t, 600, 8, 20*time.Second, urlA, urlB)
		calls = e.rds.ScriptCalls(t) - calls0
		if warm.total != 600 || warm.errors != 0 {
			t.Fatalf("warm-up: %s, want 600 responses", warm.tally)
		}
		if calls >= 600 {
			t.Fatalf("warm-up: %d script calls for 600 requests (%s): no lease spared one, the key is not hot", calls, warm.tally)
		}
		a, b, text := e.held(t, zone)
		heldUnits, heldText = a+b, text
		if a > 0 && b > 0 {
			break
		}
		if try == 3 {
			t.Fatalf("after %d warm-ups, not both instances hold a lease: %s", try, text)
		}
		t.Logf("warm-up %d (%s, %d script calls): %s; trying again", try, warm.tally, calls, text)
	}
	reset()
	n := 4 * resetLimit
	t0 := time.Now()
	r := burst(t, n, 16, 40*time.Second, urlA, urlB)
	took := time.Since(t0)
	if r.total != n || r.errors != 0 {
		t.Fatalf("the burst after the reset: %s, want %d responses within 40 s", r.tally, n)
	}
	var bound, fail string
	if lost {
		bound = fmt.Sprintf("at most %d, the limit plus the leases", resetLimit+heldUnits)
		if r.ok > resetLimit+heldUnits {
			fail = "over the limit plus the units leased at the reset"
		}
	} else {
		bound = fmt.Sprintf("at most %d, at least %d", resetLimit, resetLimit-resetLimit/10)
		if r.ok > resetLimit {
			fail = "over the limit"
		}
		if r.ok < resetLimit-resetLimit/10 {
			fail = "fewer than nine tenths of the limit: the reset starved the key"
		}
	}
	summary := fmt.Sprintf("warm-up %s (%d script calls), %s at the reset; the window after it admitted %d of %d in %.2f s (limit %d, %s): %d over the limit; %s",
		warm.tally, calls, heldText, r.ok, n, took.Seconds(), resetLimit, bound, max(r.ok-resetLimit, 0), r.tally)
	if fail != "" {
		t.Errorf("%s: %s", summary, fail)
	} else {
		t.Log(summary)
	}
}

// fromClient returns a client whose connections come from the loopback
// address from.
func fromClient(from string, timeout time.Duration) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}}
}

// sendFrom sends a GET of url from the address from with X-Status: status
// and returns the response's status and X-RateLimit-Remaining.
func sendFrom(t *testing.T, from, url, status string, timeout time.Duration) (int, string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	req.Header.Set("X-Status", status)
	resp, err := fromClient(from, timeout).Do(req)
	if err != nil {
		t.Errorf("GET %s [X-Status: %s] from %s: %v", url, status, from, err)
		return 0, ""
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining")
}

// resetCountStatus: url (and url2, the same zone, maybe on the other
// instance) is a zone of limit 5 a minute counting 401s in front of the
// backend. From the address from, five requests to url that end in 200
// after 3 s reserve the whole budget; once view's admin API shows zone's
// count at 5, reset resets the key; five 401s to url2 each get 401 (a fresh budget, Remaining 4..0);
// the slow five end in 200; and five more 401s to url2 each get 429: the
// slow ones' refunds give nothing back to the new count. It starts early
// in a sub-window, so that the slow ones and the fresh 401s are counted in
// the same one.
func resetCountStatus(t *testing.T, url, from string, reset func(key string), url2 string, view *caddy, zone string) {
	t.Helper()
	subWindowStart(t)
	type result struct {
		status    int
		remaining string
	}
	slow := make([]result, 5)
	var wg sync.WaitGroup
	for i := range slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, r := sendFrom(t, from, url+"?wait=3s", "200", 15*time.Second)
			slow[i] = result{s, r}
		}()
	}
	// The backend holds the slow ones for 3 s: the reset comes once the
	// zone counts all five, while they are in flight.
	waitFor(t, "the five slow requests counted", func() (bool, string) {
		_, resp := admin(t, view, http.MethodGet, "/rate_limit/"+zone+"/"+from)
		return strings.Contains(resp.Body, `"count":5,`), resp.Body
	})
	reset(from)
	var fresh, remaining, after []string
	for range 5 {
		s, r := sendFrom(t, from, url2, "401", 5*time.Second)
		fresh, remaining = append(fresh, strconv.Itoa(s)), append(remaining, r)
	}
	wg.Wait()
	var slowCodes, slowRem []string
	for _, r := range slow {
		slowCodes, slowRem = append(slowCodes, strconv.Itoa(r.status)), append(slowRem, r.remaining)
	}
	sort.Strings(slowRem)
	for range 5 {
		s, _ := sendFrom(t, from, url2, "401", 5*time.Second)
		after = append(after, strconv.Itoa(s))
	}
	seq := fmt.Sprintf("from %s: slow 200s in flight (%s?wait=3s): %s (Remaining %s at their check); after the reset, 5 x 401 (%s): %s (Remaining %s); once the slow ones ended, 5 x 401: %s",
		from, url, strings.Join(slowCodes, " "), strings.Join(slowRem, " "), url2, strings.Join(fresh, " "), strings.Join(remaining, " "), strings.Join(after, " "))
	if strings.Join(slowCodes, " ") != "200 200 200 200 200" || strings.Join(slowRem, " ") != "0 1 2 3 4" {
		t.Fatalf("%s; want the slow ones 200 with Remaining 0 1 2 3 4 (all five counted before the reset)", seq)
	}
	if strings.Join(fresh, " ") != "401 401 401 401 401" || strings.Join(remaining, " ") != "4 3 2 1 0" {
		t.Fatalf("%s; want 401 x 5 with Remaining 4 3 2 1 0 after the reset (a fresh budget)", seq)
	}
	if strings.Join(after, " ") != "429 429 429 429 429" {
		t.Errorf("%s; want 429 x 5: the refunds of requests reserved before the reset came off the new count", seq)
	} else {
		t.Log(seq)
	}
}

// TestE2EReset checks that a reset is a reset, on two instances sharing a
// redis-server: what was taken from a key's old life is neither spent nor
// given back in the new one.
func TestE2EReset(t *testing.T) {
	t.Parallel() // it mostly waits: sub-windows, slow answers, intervals
	be := startBackend(t)
	rds := redistest.Start(t)
	e := &resetEnv{a: newCaddy(t), b: newCaddy(t), rds: rds}
	for _, c := range []*caddy{e.a, e.b} {
		c.render(resetSite, map[string]any{"Big": []string{"d", "l"}, "Limit": resetLimit, "Redis": rds.Addr(), "Backend": be.Addr()})
		c.start()
	}
	del := func(zone, key string) {
		t.Helper()
		if req, resp := admin(t, e.a, http.MethodDelete, "/rate_limit/"+zone+"/"+key); resp.Status != 200 {
			t.Fatalf("%v: %v, want 200", req, resp)
		}
	}
	lose := func(key string) {
		t.Helper()
		if got := rds.Do(t, "DEL", key); len(got) != 1 || got[0] != "1" {
			t.Fatalf("DEL %s: %v, want 1: no such key", key, got)
		}
	}

	t.Run("leases/admin DELETE of a hot key", func(t *testing.T) {
		e.resetLeases(t, "resetd", false, func() { del("resetd", "127.0.0.1") }, e.a.url("/big-d"), e.b.url("/big-d"))
	})
	t.Run("leases/a hot key deleted in redis", func(t *testing.T) {
		e.resetLeases(t, "resetl", true, func() { lose("rst:resetl:{127.0.0.1}") }, e.a.url("/big-l"), e.b.url("/big-l"))
	})
	t.Run("count_status/memory, admin DELETE", func(t *testing.T) {
		resetCountStatus(t, e.a.url("/cs-mem/x"), "127.0.3.1", func(key string) { del("csmem", key) }, e.a.url("/cs-mem/x"), e.a, "csmem")
	})
	t.Run("count_status/redis, admin DELETE on instance a, requests on b", func(t *testing.T) {
		resetCountStatus(t, e.b.url("/cs-redis/x"), "127.0.3.2", func(key string) { del("csredis", key) }, e.b.url("/cs-redis/x"), e.a, "csredis")
	})
	t.Run("count_status/redis, admin DELETE on instance a, slow requests on a, the rest on b", func(t *testing.T) {
		resetCountStatus(t, e.a.url("/cs-redis/x"), "127.0.3.3", func(key string) { del("csredis", key) }, e.b.url("/cs-redis/x"), e.a, "csredis")
	})
	t.Run("count_status/redis, key deleted in redis", func(t *testing.T) {
		resetCountStatus(t, e.a.url("/cs-redis/x"), "127.0.3.4", func(key string) { lose("rst:csredis:{" + key + "}") }, e.a.url("/cs-redis/x"), e.a, "csredis")
	})
}
