//go:build !race

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
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

// resetLeases warms up a hot key on urlA and urlB (one zone on the two
// instances) until both hold a lease, resets it with reset, and at once
// sends 4 x the limit, 16 at a time, alternating. With lost false (the
// admin DELETE) the window after admits at most the limit and at least
// nine tenths of it; with lost true (the key deleted in Redis) at most the
// limit plus what the leases held at the reset.
func (e *resetEnv) resetLeases(t *testing.T, zone string, lost bool, reset func(), urlA, urlB string) {
	t.Helper()
	var warm e2etest.BurstResult
	var calls int64
	var heldUnits int
	var heldText string
	for try := 1; ; try++ {
		warm, calls = e2etest.WarmUp(t, e.rds, resetSub, urlA, urlB)
		a, b, text := e.held(t, zone)
		heldUnits, heldText = a+b, text
		if a > 0 && b > 0 {
			break
		}
		if try == 3 {
			t.Fatalf("after %d warm-ups, not both instances hold a lease: %s", try, text)
		}
		t.Logf("warm-up %d (%s, %d script calls): %s; trying again", try, warm.Tally, calls, text)
	}
	reset()
	n := 4 * resetLimit
	r, took := e2etest.BurstAfterReset(t, n, urlA, urlB)
	var bound, fail string
	if lost {
		bound = fmt.Sprintf("at most %d, the limit plus the leases", resetLimit+heldUnits)
		if r.OK > resetLimit+heldUnits {
			fail = "over the limit plus the units leased at the reset"
		}
	} else {
		bound = fmt.Sprintf("at most %d, at least %d", resetLimit, resetLimit-resetLimit/10)
		if r.OK > resetLimit {
			fail = "over the limit"
		}
		if r.OK < resetLimit-resetLimit/10 {
			fail = "fewer than nine tenths of the limit: the reset starved the key"
		}
	}
	summary := fmt.Sprintf("warm-up %s (%d script calls), %s at the reset; the window after it admitted %d of %d in %.2f s (limit %d, %s): %d over the limit; %s",
		warm.Tally, calls, heldText, r.OK, n, took.Seconds(), resetLimit, bound, max(r.OK-resetLimit, 0), r.Tally)
	if fail != "" {
		t.Errorf("%s: %s", summary, fail)
	} else {
		t.Log(summary)
	}
}

// resetCountStatus runs e2etest.ResetCountStatus from the address from:
// url (and url2, the same zone, maybe on the other instance) is a zone of
// limit 5 a minute counting 401s in front of the backend; reset resets
// the key once view's admin API shows zone's count at 5.
func resetCountStatus(t *testing.T, url, from string, reset func(key string), url2 string, view *caddy, zone string) {
	t.Helper()
	e2etest.ResetCountStatus(t, e2etest.Reset{
		URL: url, URL2: url2, From: from, Sub: resetSub,
		Counted: func() (bool, string) {
			_, resp := admin(t, view, http.MethodGet, "/rate_limit/"+zone+"/"+from)
			return strings.Contains(resp.Body, `"count":5,`), resp.Body
		},
		CountedWithin: startTimeout,
		Name:          "the reset",
		Do:            func() { reset(from) },
	})
}

// TestE2EReset checks that a reset is a reset, on two instances sharing a
// redis-server: what was taken from a key's old generation is neither spent nor
// given back in the new one.
func TestE2EReset(t *testing.T) {
	t.Parallel() // it mostly waits: sub-windows, slow answers, intervals
	be := e2etest.StartBackend(t)
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
