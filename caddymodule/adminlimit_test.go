package caddymodule

import (
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// only returns the one state of report, failing t unless there is exactly
// one that fallback describes.
func only(t *testing.T, report keyReport, fallback bool) keyState {
	t.Helper()
	var found []keyState
	for _, s := range report.States {
		if s.Fallback == fallback {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d states with fallback %v in %+v, want 1", len(found), fallback, report)
	}
	return found[0]
}

// checkFallback exhausts the zone at url without a key, then checks that
// GET of the client's address reports the count under the fallback key,
// and that DELETE of the address forgets it.
func checkFallback(t *testing.T, tc *caddytest.Tester, url, zone string, limit int64) {
	t.Helper()
	exhaust(t, tc, url, "", int(limit))
	var report keyReport
	if code := adminDo(t, "GET", "/rate_limit/"+zone+"/127.0.0.1", &report); code != 200 || len(report.States) != 2 {
		t.Fatalf("GET 127.0.0.1: %d %+v, want the key and its fallback", code, report)
	}
	if s := only(t, report, false); s.Key != "127.0.0.1" || s.Tracked || num(s.Count) != 0 {
		t.Errorf("the key 127.0.0.1 itself: %+v count %d", s, num(s.Count))
	}
	s := only(t, report, true)
	if s.Key != emptyKeyPrefix+"127.0.0.1" || !s.Tracked || num(s.Count) != limit || num(s.Remaining) != 0 || s.Limit != limit {
		t.Errorf("the fallback key: %+v count %d remaining %d, want %d counted, 0 remaining", s, num(s.Count), num(s.Remaining), limit)
	}
	if code := adminDo(t, "DELETE", "/rate_limit/"+zone+"/127.0.0.1", &report); code != 200 || !only(t, report, true).Tracked {
		t.Fatalf("DELETE 127.0.0.1: %d %+v, want the fallback key forgotten", code, report)
	}
	exhaust(t, tc, url, "", int(limit))
}

// GET of an address reports the fallback key its keyless requests are
// counted under, DELETE forgets it; a key's override, a CIDR override of
// the address asked about and a tier are reported as its limit, with
// remaining against it.
func TestAdminAPIKeyLimitsAndFallback(t *testing.T) {
	tc := newTester(t)
	port := freePort(t)
	tc.InitServer(bareSite(port, `
	route /api {
		rate_limit {
			zone fb {
				key {http.request.header.X-Key}
				window 1m
				limit 3
				override gold 5
			}
		}
		respond "api"
	}
	route /ip {
		rate_limit {
			zone byip {
				window 1m
				limit 2
				override 127.0.0.0/8 4
				override 10.0.0.0/8 unlimited
			}
		}
		respond "ip"
	}
	route /tier {
		rate_limit {
			zone tier {
				key {http.request.header.X-Key}
				window 1m
				limit {http.request.header.X-Plan} 2
			}
		}
		respond "tier"
	}
`), "caddyfile")
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	checkFallback(t, tc, base+"/api", "fb", 3)

	exhaust(t, tc, base+"/api", "gold", 5)
	var report keyReport
	adminDo(t, "GET", "/rate_limit/fb/gold", &report)
	if s := only(t, report, false); s.Limit != 5 || s.ZoneLimit != 3 || s.LimitSource != "override" || num(s.Count) != 5 || num(s.Remaining) != 0 {
		t.Errorf("gold: %+v count %d remaining %d, want limit 5 from its override", s, num(s.Count), num(s.Remaining))
	}

	exhaust(t, tc, base+"/ip", "", 4)
	adminDo(t, "GET", "/rate_limit/byip/127.0.0.1", &report)
	if s := only(t, report, false); s.Limit != 4 || s.LimitSource != "override" || num(s.Count) != 4 || num(s.Remaining) != 0 {
		t.Errorf("127.0.0.1 in 127.0.0.0/8: %+v count %d remaining %d, want limit 4", s, num(s.Count), num(s.Remaining))
	}
	report = keyReport{} // Unmarshal would keep the last state's fields
	adminDo(t, "GET", "/rate_limit/byip/10.1.2.3", &report)
	if s := only(t, report, false); !s.Unlimited || s.Remaining != nil {
		t.Errorf("10.1.2.3: %+v, want unlimited without remaining", s)
	}

	adminDo(t, "GET", "/rate_limit/tier/someone", &report)
	if s := only(t, report, false); s.LimitSource != "tier" || s.Limit != 2 || !strings.Contains(s.Note, "{http.request.header.X-Plan}") {
		t.Errorf("a key of a tiered zone: %+v, want the fallback limit and a note naming the placeholder", s)
	}
}

// With Redis too: the keyless client's count is read from, and deleted
// in, Redis under its fallback key.
func TestAdminAPIFallbackRedis(t *testing.T) {
	srv := redistest.Start(t)
	tc := newTester(t)
	port := freePort(t)
	tc.InitServer(bareSite(port, `
	rate_limit {
		zone rfb {
			key {http.request.header.X-Key}
			window 1m
			limit 3
		}
		store redis {
			address `+srv.Addr()+`
			key_prefix fb:
		}
		on_store_error deny
	}
	respond "ok"
`), "caddyfile")
	checkFallback(t, tc, "http://127.0.0.1:"+strconv.Itoa(port)+"/", "rfb", 3)
}
