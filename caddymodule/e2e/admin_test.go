//go:build !race

package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/redistest"
)

// adminSite is the site of TestE2EAdminAPI: a zone of limit 3 keyed by
// X-Key in memory (/mem) and one in Redis (/redis).
const adminSite = `{
	admin 127.0.0.1:{{.Admin}}
	persist_config off
}
:{{.Web}} {
	bind 127.0.0.1
	route /mem {
		rate_limit {
			zone adm {
				key {http.request.header.X-Key}
				window 1m
				limit 3
			}
		}
		respond "ok"
	}
	route /redis {
		rate_limit {
			zone admr {
				key {http.request.header.X-Key}
				window 1m
				limit 3
			}
			store redis {
				address {{.Redis}}
				key_prefix adm:
			}
			on_store_error deny
		}
		respond "ok"
	}
}
`

// admin sends an admin API request and returns its status and body.
func admin(t *testing.T, c *caddy, method, path string) (e2etest.Request, e2etest.Response) {
	t.Helper()
	r := e2etest.Request{Method: method, URL: c.adminURL(path)}
	return r, e2etest.Do(t, r)
}

// adminCycle exhausts key on path (3 x 200, then 429, which the Redis
// guard caches); GET /rate_limit/zone/escaped shows it, as stored, in store
// with count 3, remaining 0 and a reset of 1..66 s, and counts nothing;
// DELETE forgets it; it is admitted again with 2 remaining.
func adminCycle(t *testing.T, c *caddy, path, zone, key, escaped, stored, store string) {
	t.Helper()
	for n := 1; n <= 4; n++ {
		want := 200
		if n > 3 {
			want = 429
		}
		if req, resp := e2etest.Get(t, c.url(path), "X-Key", key); resp.Status != want {
			t.Fatalf("request %d: %v: %v, want %d", n, req, resp, want)
		}
	}
	req, resp := admin(t, c, http.MethodGet, "/rate_limit/"+zone+"/"+escaped)
	if resp.Status != 200 {
		t.Fatalf("%v: %v, want 200", req, resp)
	}
	// The entry of the key itself: an address also finds its keyless
	// fallback entry, which holds nothing here.
	entry := regexp.MustCompile(`"store":"` + store + `",("key_prefix":"[^"]*",)?"key":"` + regexp.QuoteMeta(stored) + `",[^}]*`).FindString(resp.Body)
	prefix := `"key":"` + stored + `","limit":3,"zone_limit":3,"limit_source":"zone","tracked":true,"count":3,"remaining":0,"reset":`
	_, after, ok := strings.Cut(entry, prefix)
	reset, err := strconv.Atoi(after)
	if !ok || err != nil || reset < 1 || reset > 66 {
		t.Fatalf("%v: %v, want %s with count 3, remaining 0 and a reset of 1..66 s", req, resp, stored)
	}
	if req, resp := e2etest.Get(t, c.url(path), "X-Key", key); resp.Status != 429 {
		t.Fatalf("after the GET: %v: %v, want 429 (GET must count nothing)", req, resp)
	}
	if req, resp := admin(t, c, http.MethodDelete, "/rate_limit/"+zone+"/"+escaped); resp.Status != 200 {
		t.Fatalf("%v: %v, want 200", req, resp)
	}
	if req, resp := e2etest.Get(t, c.url(path), "X-Key", key); resp.Status != 200 || resp.Header.Get("X-RateLimit-Remaining") != "2" {
		t.Fatalf("after the DELETE: %v: %v, want 200 with 2 remaining", req, resp)
	}
}

// TestE2EAdminAPI drives admin.api.rate_limit on the admin endpoint, in
// memory and in a throwaway redis-server.
func TestE2EAdminAPI(t *testing.T) {
	rds := redistest.Start(t)
	c := newCaddy(t)
	c.render(adminSite, map[string]any{"Redis": rds.Addr()})
	c.start()

	t.Run("memory: GET shows a key, DELETE forgets it", func(t *testing.T) {
		adminCycle(t, c, "/mem", "adm", "alice", "alice", "alice", "memory")
	})
	t.Run("memory: an IPv6 /64 by its escaped prefix", func(t *testing.T) {
		adminCycle(t, c, "/mem", "adm", "2001:db8:1:2::5", "2001:db8:1:2::%2F64", "2001:db8:1:2::/64", "memory")
	})
	t.Run("an address of the /64 finds its /64; an unescaped slash is refused", func(t *testing.T) {
		req, resp := admin(t, c, http.MethodGet, "/rate_limit/adm/2001:db8:1:2::abcd")
		if !strings.Contains(resp.Body, `"key":"2001:db8:1:2::/64","limit":3,"zone_limit":3,"limit_source":"zone","tracked":true,"count":1,`) {
			t.Errorf("%v: %v, want the /64 with count 1", req, resp)
		}
		if req, resp := admin(t, c, http.MethodGet, "/rate_limit/adm/2001:db8:1:2::/64"); resp.Status != 400 {
			t.Errorf("%v: %v, want 400", req, resp)
		}
	})
	t.Run("redis: GET shows a key, DELETE forgets it and its Redis key", func(t *testing.T) {
		adminCycle(t, c, "/redis", "admr", "bob/1", "bob%2F1", "bob/1", "redis")
		if got := rds.Do(t, "EXISTS", "adm:admr:{bob/1}"); len(got) != 1 || got[0] != "1" {
			t.Fatalf("EXISTS adm:admr:{bob/1} after a request: %v, want 1", got)
		}
		req, resp := admin(t, c, http.MethodDelete, "/rate_limit/admr/bob%2F1")
		if got := rds.Do(t, "EXISTS", "adm:admr:{bob/1}"); resp.Status != 200 || len(got) != 1 || got[0] != "0" {
			t.Fatalf("%v: %v; EXISTS adm:admr:{bob/1}: %v, want 200 and 0", req, resp, got)
		}
	})
	t.Run("the listing names each zone's keys and stores", func(t *testing.T) {
		req, resp := admin(t, c, http.MethodGet, "/rate_limit/")
		var list struct {
			Zones []struct {
				Name   string              `json:"name"`
				Keys   int                 `json:"keys"`
				Stores []map[string]string `json:"stores"`
			} `json:"zones"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &list); err != nil {
			t.Fatalf("%v: %v: %v", req, resp, err)
		}
		type zone struct {
			Name   string
			Keys   int
			Stores []map[string]string
		}
		var got []zone
		for _, z := range list.Zones {
			got = append(got, zone{z.Name, z.Keys, z.Stores})
		}
		want := []zone{
			{"adm", 2, []map[string]string{{"type": "memory"}}},
			{"admr", 0, []map[string]string{{"type": "redis", "key_prefix": "adm:"}}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: %v, want zones %v", req, resp, want)
		}
	})
	t.Run("an unknown zone is 404 and a PUT 405, in JSON", func(t *testing.T) {
		if req, resp := admin(t, c, http.MethodGet, "/rate_limit/nope/alice"); resp.Status != 404 || !strings.Contains(resp.Body, `"error":"unknown zone`) {
			t.Errorf("%v: %v, want 404 with \"error\":\"unknown zone...\"", req, resp)
		}
		if req, resp := admin(t, c, http.MethodPut, "/rate_limit/adm/alice"); resp.Status != 405 || !strings.Contains(resp.Body, `"error"`) {
			t.Errorf("%v: %v, want 405 with an \"error\"", req, resp)
		}
	})
	t.Run("no key in caddy's log but in the admin endpoint's request lines", func(t *testing.T) {
		for _, line := range strings.Split(c.logText(), "\n") {
			if regexp.MustCompile(`alice|bob|2001:db8`).MatchString(line) &&
				!strings.Contains(line, `"logger":"admin.api","msg":"received request"`) {
				t.Errorf("caddy logged a key: %s", line)
			}
		}
	})
}
