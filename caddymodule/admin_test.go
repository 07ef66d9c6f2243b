package caddymodule

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// These tests drive the admin API on the admin endpoint of the Caddy that
// caddytest runs in this process, so the route is registered and served
// as Caddy does it.

// adminDo sends a request to the admin API and returns the status and
// the decoded JSON body.
func adminDo(t *testing.T, method, path string, into any) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://localhost:"+strconv.Itoa(adminPort)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: %d, Content-Type %q: %s", method, path, resp.StatusCode, ct, body)
	}
	if into != nil {
		if err := json.Unmarshal(body, into); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, body)
		}
	}
	return resp.StatusCode
}

// fetch sends a GET with header X-Key: key and returns the status.
func fetch(t *testing.T, tc *caddytest.Tester, url, key string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Key", key)
	resp, err := tc.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func exhaust(t *testing.T, tc *caddytest.Tester, url, key string, limit int) {
	t.Helper()
	for i := 1; i <= limit+1; i++ {
		want := 200
		if i > limit {
			want = 429
		}
		if got := fetch(t, tc, url, key); got != want {
			t.Fatalf("%s key %q request %d: %d, want %d", url, key, i, got, want)
		}
	}
}

// state returns the one state of report whose limit is limit.
func state(t *testing.T, report keyReport, limit int64) keyState {
	t.Helper()
	var found []keyState
	for _, s := range report.States {
		if s.Limit == limit {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d states of limit %d in %+v, want 1", len(found), limit, report)
	}
	return found[0]
}

func num(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// Two handlers with a zone "api" of different limits: the listing shows
// both states, GET shows the key in each, DELETE forgets it in both and
// the key is admitted again. An IPv6 /64 key is addressed with %2F, or by
// any address of the /64.
func TestAdminAPIMemory(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	tc.InitServer(bareSite(port, `
	route /a {
		rate_limit {
			zone api {
				key {http.request.header.X-Key}
				window 1m
				limit 3
			}
		}
		respond "a"
	}
	route /b {
		rate_limit {
			zone api {
				key {http.request.header.X-Key}
				window 1m
				limit 5
			}
		}
		respond "b"
	}
	route /v6 {
		rate_limit {
			zone v6 {
				key {http.request.header.X-Key}
				window 1m
				limit 2
			}
		}
		respond "v6"
	}
`), "caddyfile")
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	exhaust(t, tc, base+"/a", "alice", 3)

	var list listing
	if code := adminDo(t, "GET", "/rate_limit/", &list); code != 200 {
		t.Fatalf("listing: %d", code)
	}
	var apis []zoneInfo
	for _, z := range list.Zones {
		if z.Name == "api" {
			apis = append(apis, z)
		}
	}
	if len(apis) != 2 || apis[0].ID == apis[1].ID || apis[0].Limit+apis[1].Limit != 8 {
		t.Fatalf("listing: zones api %+v, want two states of limits 3 and 5", apis)
	}
	for _, z := range apis {
		if want := map[int64]int{3: 1, 5: 0}[z.Limit]; z.Keys != want || len(z.Stores) != 1 || z.Stores[0].Type != "memory" {
			t.Errorf("listing: %+v, want %d keys in memory", z, want)
		}
	}
	var one listing
	if code := adminDo(t, "GET", "/rate_limit/api", &one); code != 200 || len(one.Zones) != 2 {
		t.Errorf("listing of api: %d %+v", code, one)
	}

	var report keyReport
	if code := adminDo(t, "GET", "/rate_limit/api/alice", &report); code != 200 || len(report.States) != 2 {
		t.Fatalf("GET alice: %d %+v", code, report)
	}
	if s := state(t, report, 3); !s.Tracked || num(s.Count) != 3 || num(s.Remaining) != 0 || num(s.Reset) < 1 || num(s.Reset) > 66 || s.Key != "alice" {
		t.Errorf("alice in the zone of limit 3: %+v count %d remaining %d reset %d", s, num(s.Count), num(s.Remaining), num(s.Reset))
	}
	if s := state(t, report, 5); s.Tracked || num(s.Count) != 0 || num(s.Remaining) != 5 {
		t.Errorf("alice in the zone of limit 5: %+v", s)
	}
	// GET counted nothing: the key is still denied, and bob untouched.
	if got := fetch(t, tc, base+"/a", "alice"); got != 429 {
		t.Fatalf("alice after GET: %d, want 429", got)
	}

	if code := adminDo(t, "DELETE", "/rate_limit/api/alice", &report); code != 200 {
		t.Fatalf("DELETE alice: %d", code)
	}
	if s := state(t, report, 3); !s.Tracked || !strings.HasPrefix(s.Note, "reset: the next request starts one fresh budget") {
		t.Errorf("DELETE: %+v, want the tracked key forgotten, and a note on what the reset starts", s)
	}
	exhaust(t, tc, base+"/a", "alice", 3)

	var apiErr struct{ Error string }
	if code := adminDo(t, "GET", "/rate_limit/nope/alice", &apiErr); code != 404 || !strings.Contains(apiErr.Error, `unknown zone "nope"`) {
		t.Errorf("unknown zone: %d %+v", code, apiErr)
	}
	if code := adminDo(t, "DELETE", "/rate_limit/nope/alice", nil); code != 404 {
		t.Errorf("DELETE in an unknown zone: %d, want 404", code)
	}
	if code := adminDo(t, "PUT", "/rate_limit/api/alice", nil); code != 405 {
		t.Errorf("PUT: %d, want 405", code)
	}
	if code := adminDo(t, "DELETE", "/rate_limit/", nil); code != 405 {
		t.Errorf("DELETE of the listing: %d, want 405", code)
	}

	// An IPv6 key is grouped by /64: the slash is %2F, and an unescaped
	// one is refused rather than guessed at.
	for i := 1; i <= 3; i++ {
		req, _ := http.NewRequest(http.MethodGet, base+"/v6", nil)
		req.Header.Set("X-Key", "2001:db8:1:2::"+strconv.Itoa(i))
		resp, err := tc.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{true: 200, false: 429}[i <= 2]; resp.StatusCode != want {
			t.Fatalf("v6 request %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	for _, path := range []string{"/rate_limit/v6/2001:db8:1:2::%2F64", "/rate_limit/v6/2001:db8:1:2::abcd"} {
		report = keyReport{}
		// The key, then the fallback key of the /64's keyless requests.
		if code := adminDo(t, "GET", path, &report); code != 200 || len(report.States) != 2 {
			t.Fatalf("GET %s: %d %+v", path, code, report)
		}
		if s := report.States[0]; s.Key != "2001:db8:1:2::/64" || s.Fallback || num(s.Count) != 2 || num(s.Remaining) != 0 {
			t.Errorf("GET %s: %+v count %d remaining %d", path, s, num(s.Count), num(s.Remaining))
		}
		if s := report.States[1]; s.Key != "\x00client_ip:2001:db8:1:2::/64" || !s.Fallback || s.Tracked {
			t.Errorf("GET %s: fallback %+v", path, s)
		}
	}
	if code := adminDo(t, "GET", "/rate_limit/v6/2001:db8:1:2::/64", &apiErr); code != 400 || !strings.Contains(apiErr.Error, "%2F") {
		t.Errorf("unescaped slash: %d %+v, want 400", code, apiErr)
	}
	if code := adminDo(t, "DELETE", "/rate_limit/v6/2001:db8:1:2::%2F64", nil); code != 200 {
		t.Fatalf("DELETE the /64: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v6", nil)
	req.Header.Set("X-Key", "2001:db8:1:2::9")
	if resp, err := tc.Client.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the /64 after DELETE: %v %v, want 200", resp, err)
	}
}

// With Redis, GET reads the Redis key as the script would, and DELETE
// deletes it and clears the guard's cached denial: the key is admitted at
// once.
func TestAdminAPIRedis(t *testing.T) {
	srv := redistest.Start(t)
	tc := newTester(t)
	port := freePort(t)
	tc.InitServer(bareSite(port, `
	rate_limit {
		zone radm {
			key {http.request.header.X-Key}
			window 1m
			limit 3
		}
		store redis {
			address `+srv.Addr()+`
			key_prefix adm:
		}
		on_store_error deny
	}
	respond "ok"
`), "caddyfile")
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	// Exhausted, then denied twice: the second denial comes from the
	// guard's cache, which DELETE must clear too.
	exhaust(t, tc, url, "carol/x", 3)
	if got := fetch(t, tc, url, "carol/x"); got != 429 {
		t.Fatalf("cached denial: %d", got)
	}

	var list listing
	adminDo(t, "GET", "/rate_limit/radm", &list)
	if len(list.Zones) != 1 || len(list.Zones[0].Stores) != 1 || list.Zones[0].Stores[0] != (storeInfo{Type: "redis", KeyPrefix: "adm:"}) {
		t.Fatalf("listing: %+v", list)
	}
	var report keyReport
	if code := adminDo(t, "GET", "/rate_limit/radm/carol%2Fx", &report); code != 200 || len(report.States) != 1 {
		t.Fatalf("GET: %d %+v", code, report)
	}
	if s := report.States[0]; s.Store != "redis" || !s.Tracked || num(s.Count) != 3 || num(s.Remaining) != 0 || num(s.Reset) < 1 || num(s.Reset) > 66 {
		t.Errorf("GET: %+v count %d remaining %d reset %d", s, num(s.Count), num(s.Remaining), num(s.Reset))
	}
	if code := adminDo(t, "DELETE", "/rate_limit/radm/carol%2Fx", &report); code != 200 || len(report.States) != 1 || !report.States[0].Tracked {
		t.Fatalf("DELETE: %d %+v", code, report)
	}
	if n := srv.Do(t, "EXISTS", "adm:radm:{carol/x}"); len(n) != 1 || n[0] != "0" {
		t.Fatalf("the redis key after DELETE: EXISTS %v", n)
	}
	exhaust(t, tc, url, "carol/x", 3)
}
