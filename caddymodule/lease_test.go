package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/lease"
)

// leaseConfig is a handler's JSON config: zones (the inside of
// rate_limits) counted in the redis-server at addr under prefix, with
// lease set to leaseMode unless it is empty.
func leaseConfig(zones, addr, prefix, leaseMode string) string {
	l := ""
	if leaseMode != "" {
		l = `,"lease":"` + leaseMode + `"`
	}
	return `{"rate_limits":{` + zones + `},"redis":{"address":"` + addr + `","key_prefix":"` + prefix + `"` + l + `}}`
}

// warmUp sends h one request on a key of its own, so that the script is
// loaded (a first EVALSHA answered NOSCRIPT is followed by an EVAL) before
// a test counts calls.
func warmUp(t *testing.T, h *Handler) {
	t.Helper()
	serve(t, h, "192.0.2.254", "/warm-up")
}

// scriptCalls returns how many times the server at addr ran the script.
func scriptCalls(t *testing.T, addr string) int64 {
	t.Helper()
	calls := redistest.Calls(t, addr)
	return calls["evalsha"] + calls["eval"]
}

// earlyInSubWindow waits, if need be, until at least need is left of the
// current sub-window of length sub (sub-windows start at multiples of sub
// since the epoch, on the clock the local redis-server shares), so that a
// test's requests and its leases fall in one sub-window.
func earlyInSubWindow(t *testing.T, sub, need time.Duration) {
	t.Helper()
	if left := sub - time.Duration(time.Now().UnixNano())%sub; left < need {
		time.Sleep(left + 10*time.Millisecond)
	}
}

// zoneOf returns h's zone named name.
func zoneOf(t *testing.T, h *Handler, name string) *zoneState {
	t.Helper()
	for _, z := range h.zones {
		if z.name == name {
			return z
		}
	}
	t.Fatalf("no zone %q", name)
	return nil
}

// redisCount returns what Redis counts for key in h's zone name.
func redisCountOf(t *testing.T, h *Handler, name, key string) int64 {
	t.Helper()
	store, ok := redisOf(h.store)
	if !ok {
		t.Fatal("the handler's store is not Redis")
	}
	st, err := store.Inspect(context.Background(), zoneOf(t, h, name).zone, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return st.Count
}

// Which zones get a lease table: with store redis and lease auto (the
// default), every zone but count_status ones, log zones included (their
// table never asks for units); none with lease off or in memory.
func TestLeaseProvision(t *testing.T) {
	srv := redistest.Start(t)
	zones := `"plain":{"window":"1m","limit":100},"login":{"window":"1m","limit":5,"count_status":[401]},"logz":{"window":"1m","limit":10,"algorithm":"log"}`
	for _, mode := range []string{"", "auto", "off"} {
		h, _ := newHandler(t, leaseConfig(zones, srv.Addr(), "prov:", mode))
		for _, z := range h.zones {
			want := mode != "off" && z.name != "login"
			if got := z.lease != nil; got != want {
				t.Errorf("lease %q, zone %s: has a table %v, want %v", mode, z.name, got, want)
			}
		}
	}
	h, _ := newHandler(t, `{"rate_limits":{`+zones+`}}`)
	for _, z := range h.zones {
		if z.lease != nil {
			t.Errorf("memory store, zone %s: has a lease table", z.name)
		}
	}
}

// A hot key through the handler: with lease off one script call per
// request; with lease auto far fewer, every request admitted all the
// same, and once the handler is cleaned up (its leases given back) Redis
// counts exactly the requests admitted.
func TestLeaseHotKeyFewerCalls(t *testing.T) {
	srv := redistest.Start(t)
	const n = 400
	zones := `"hot":{"window":"20s","sub_window":"10s","limit":100000}`
	calls := map[string]int64{}
	for _, mode := range []string{"off", "auto"} {
		prefix := "hot" + mode + ":"
		h, _ := newHandler(t, leaseConfig(zones, srv.Addr(), prefix, mode))
		// Counts the key without leases, on the same Redis client.
		checker, _ := newHandler(t, leaseConfig(zones, srv.Addr(), prefix, "off"))
		warmUp(t, h)
		earlyInSubWindow(t, 10*time.Second, 5*time.Second)
		before := scriptCalls(t, srv.Addr())
		for i := range n {
			if res := serve(t, h, "203.0.113.9", "/"); res.status != 200 {
				t.Fatalf("lease %s: request %d: %d", mode, i+1, res.status)
			}
		}
		calls[mode] = scriptCalls(t, srv.Addr()) - before
		var st lease.Stats
		if tbl := zoneOf(t, h, "hot").lease; tbl != nil {
			st = tbl.Stats()
			held, _ := tbl.Inspect("203.0.113.9")
			// Leased units are counted in Redis before they are spent.
			if got, want := redisCountOf(t, checker, "hot", "203.0.113.9"), n+held.Units; got != want {
				t.Errorf("lease %s: Redis counts %d while the lease holds %d unspent, want %d", mode, got, held.Units, want)
			}
		}
		t.Logf("lease %s: %d requests, %d script calls, %+v", mode, n, calls[mode], st)
		if mode == "auto" && (st.Leases == 0 || int64(st.Saved)+calls[mode] != n) {
			t.Errorf("lease auto: %+v and %d calls for %d requests: want leases, and every request decided by a call or a lease", st, calls[mode], n)
		}
		if err := h.Cleanup(); err != nil {
			t.Fatal(err)
		}
		if got := redisCountOf(t, checker, "hot", "203.0.113.9"); got != n {
			t.Errorf("lease %s: after Cleanup Redis counts %d, want the %d admitted", mode, got, n)
		}
	}
	if calls["off"] != n {
		t.Errorf("lease off: %d script calls for %d requests, want one each", calls["off"], n)
	}
	if calls["auto"]*10 > n {
		t.Errorf("lease auto: %d script calls for %d requests, want at most one in 10", calls["auto"], n)
	}
}

// At the limit, leases admit exactly what one call per request admits:
// near the limit Redis grants less and less, then nothing.
func TestLeaseExactAtLimit(t *testing.T) {
	srv := redistest.Start(t)
	for _, limit := range []int{5, 50, 333} {
		for _, mode := range []string{"off", "auto"} {
			zones := `"exact":{"window":"20s","sub_window":"10s","limit":` + strconv.Itoa(limit) + `}`
			prefix := fmt.Sprintf("exact%d%s:", limit, mode)
			h, _ := newHandler(t, leaseConfig(zones, srv.Addr(), prefix, mode))
			earlyInSubWindow(t, 10*time.Second, 5*time.Second)
			got := statuses(t, h, 2*limit, "198.51.100.4", "/")
			for i, s := range got {
				want := 200
				if i >= limit {
					want = 429
				}
				if s != want {
					t.Fatalf("limit %d, lease %s: request %d: %d, want %d (all: %v)", limit, mode, i+1, s, want, got)
				}
			}
			if c := redisCountOf(t, h, "exact", "198.51.100.4"); c != int64(limit) {
				t.Errorf("limit %d, lease %s: Redis counts %d", limit, mode, c)
			}
			if tbl := zoneOf(t, h, "exact").lease; tbl != nil {
				t.Logf("limit %d: %+v", limit, tbl.Stats())
			}
		}
	}
}

// count_status zones and requests checked against several zones are
// decided with one call per request; a request of one leasing zone alone
// leases.
func TestLeaseNotForCountStatusOrSeveralZones(t *testing.T) {
	srv := redistest.Start(t)
	const n = 60
	zones := `"all":{"window":"20s","sub_window":"10s","limit":100000},` +
		`"b":{"window":"20s","sub_window":"10s","limit":100000,"match":[{"path":["/b/*"]}]},` +
		`"login":{"window":"20s","sub_window":"10s","limit":100000,"count_status":[401],"match":[{"path":["/login"]}]}`
	h, _ := newHandler(t, leaseConfig(zones, srv.Addr(), "several:", "auto"))
	if zoneOf(t, h, "login").lease != nil {
		t.Fatal("the count_status zone has a lease table")
	}
	warmUp(t, h)
	earlyInSubWindow(t, 10*time.Second, 5*time.Second)

	before := scriptCalls(t, srv.Addr())
	for range n {
		if res := serve(t, h, "192.0.2.1", "/b/x"); res.status != 200 {
			t.Fatalf("/b/x: %d", res.status)
		}
	}
	if c := scriptCalls(t, srv.Addr()) - before; c != n {
		t.Errorf("two zones: %d script calls for %d requests, want one each", c, n)
	}
	for _, name := range []string{"all", "b"} {
		if st := zoneOf(t, h, name).lease.Stats(); st != (lease.Stats{}) {
			t.Errorf("zone %s after requests of two zones: %+v, want no lease", name, st)
		}
	}

	// /login matches all and login: two zones, one of them count_status.
	before = scriptCalls(t, srv.Addr())
	for range n {
		if res := serve(t, h, "192.0.2.2", "/login"); res.status != 200 {
			t.Fatalf("/login: %d", res.status)
		}
	}
	if c := scriptCalls(t, srv.Addr()) - before; c < n {
		t.Errorf("count_status: %d script calls for %d requests, want at least one each", c, n)
	}

	// One zone alone: leases.
	before = scriptCalls(t, srv.Addr())
	for range n {
		serve(t, h, "192.0.2.3", "/a")
	}
	c := scriptCalls(t, srv.Addr()) - before
	if st := zoneOf(t, h, "all").lease.Stats(); st.Leases == 0 || c >= n/2 {
		t.Errorf("zone all alone: %d calls for %d requests, %+v: want leases", c, n, st)
	}
}

// A count_status zone alone never leases either.
func TestLeaseCountStatusAlone(t *testing.T) {
	srv := redistest.Start(t)
	const n = 40
	h, _ := newHandler(t, leaseConfig(`"login":{"window":"20s","sub_window":"10s","limit":100000,"count_status":[200]}`, srv.Addr(), "csalone:", ""))
	warmUp(t, h)
	earlyInSubWindow(t, 10*time.Second, 5*time.Second)
	before := scriptCalls(t, srv.Addr())
	for range n {
		if res := serve(t, h, "192.0.2.9", "/"); res.status != 200 {
			t.Fatalf("%d", res.status)
		}
	}
	if c := scriptCalls(t, srv.Addr()) - before; c != n {
		t.Errorf("count_status zone alone: %d script calls for %d requests (every response counted, no refund), want one each", c, n)
	}
}

// The admin API shows this instance's lease on a key; the lease metrics
// count it, and keep their counts when the handler goes.
func TestLeaseAdminAndMetrics(t *testing.T) {
	srv := redistest.Start(t)
	h, ctx := newHandler(t, leaseConfig(`"leasedmin":{"window":"20s","sub_window":"10s","limit":100000}`, srv.Addr(), "leaseadmin:", ""))
	reg := ctx.GetMetricsRegistry()
	earlyInSubWindow(t, 10*time.Second, 5*time.Second)
	before := leaseStatsByZone()["leasedmin"]
	for range 50 {
		serve(t, h, "192.0.2.77", "/")
	}
	held, ok := zoneOf(t, h, "leasedmin").lease.Inspect("192.0.2.77")
	if !ok {
		t.Fatalf("no lease after 50 requests: %+v", zoneOf(t, h, "leasedmin").lease.Stats())
	}

	get := func(key string) keyReport {
		t.Helper()
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, adminPrefix+"leasedmin/"+key, nil)
		if err := (adminAPI{}).serve(w, r); err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		var rep keyReport
		if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := get("192.0.2.77")
	if len(rep.States) != 1 || rep.States[0].Store != "redis" || rep.States[0].Lease == nil {
		t.Fatalf("report %+v: want one redis state with a lease", rep)
	}
	l := rep.States[0].Lease
	left, err := time.ParseDuration(l.ExpiresIn)
	if l.Units != held.Units || err != nil || left <= 0 || left > 10*time.Second {
		t.Errorf("lease %+v, want %d units expiring within the sub-window (%v)", l, held.Units, err)
	}
	if c := *rep.States[0].Count; c != 50+held.Units {
		t.Errorf("count %d, want the 50 admitted and the %d leased", c, held.Units)
	}
	if rep := get("192.0.2.78"); len(rep.States) != 1 || rep.States[0].Lease != nil {
		t.Errorf("a key without a lease: %+v", rep)
	}

	// Metrics: the table's counters, by zone.
	st := zoneOf(t, h, "leasedmin").lease.Stats()
	metric := func(name string) float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				if labelValue(m.GetLabel(), "zone") == "leasedmin" {
					return m.GetCounter().GetValue()
				}
			}
		}
		t.Fatalf("no %s{zone=leasedmin}", name)
		return 0
	}
	// The metrics sum every table of the zone name, closed ones included:
	// this test's table adds st to what they held before it.
	check := func(when string, st lease.Stats) {
		t.Helper()
		for name, want := range map[string]uint64{
			"caddy_http_rate_limit_lease_grants_total":         before.Leases + st.Leases,
			"caddy_http_rate_limit_lease_units_granted_total":  before.Granted + st.Granted,
			"caddy_http_rate_limit_lease_units_returned_total": before.Returned + st.Returned,
			"caddy_http_rate_limit_lease_admitted_total":       before.Saved + st.Saved,
		} {
			if got := metric(name); got != float64(want) {
				t.Errorf("%s: %s = %v, want %d", when, name, got, want)
			}
		}
	}
	check("live", st)
	if st.Saved == 0 || st.Granted == 0 {
		t.Errorf("stats %+v: want units granted and requests admitted from them", st)
	}
	if err := h.Cleanup(); err != nil {
		t.Fatal(err)
	}
	after := zoneOf(t, h, "leasedmin").lease.Stats()
	if after.Returned-st.Returned != uint64(held.Units) {
		t.Errorf("Cleanup gave back %d units, want the %d unspent", after.Returned-st.Returned, held.Units)
	}
	// The closed table's counts stay in the metrics.
	check("after Cleanup", after)
}

// Two instances (two handlers, each with its own leases) alternating on
// one key, as caddymodule/e2e's TestE2ERedisShared does: exactly the limit is
// admitted, then 429, leases or not. (The X-RateLimit-Remaining of a
// request differs with leases: units an instance holds unspent count as
// used, and a request admitted from a lease does not see the other
// instance's requests since the lease was granted.)
func TestLeaseTwoInstancesExact(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []string{"off", "auto"} {
		cfg := leaseConfig(`"shared":{"window":"1m","limit":20}`, srv.Addr(), "two"+mode+":", mode)
		a, _ := newHandler(t, cfg)
		b, _ := newHandler(t, cfg)
		earlyInSubWindow(t, 6*time.Second, 3*time.Second)
		var got []int
		for n := 1; n <= 22; n++ {
			h := a
			if n%2 == 0 {
				h = b
			}
			got = append(got, serve(t, h, "127.0.0.1", "/").status)
		}
		for i, s := range got {
			if want := map[bool]int{true: 200, false: 429}[i < 20]; s != want {
				t.Fatalf("lease %s: request %d: %d, want %d (all: %v)", mode, i+1, s, want, got)
			}
		}
		if mode == "auto" {
			t.Logf("lease auto: instance a %+v, b %+v", zoneOf(t, a, "shared").lease.Stats(), zoneOf(t, b, "shared").lease.Stats())
		}
	}
}

// An operator's DELETE ends this instance's lease on the key: its units
// were counted in the key the reset deletes, and are not spent after it.
func TestLeaseAdminDeleteEndsLease(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHandler(t, leaseConfig(`"leasedel":{"window":"20s","sub_window":"10s","limit":100000}`, srv.Addr(), "leasedel:", ""))
	earlyInSubWindow(t, 10*time.Second, 5*time.Second)
	for range 50 {
		serve(t, h, "192.0.2.77", "/")
	}
	tbl := zoneOf(t, h, "leasedel").lease
	if _, ok := tbl.Inspect("192.0.2.77"); !ok {
		t.Fatalf("no lease after 50 requests: %+v", tbl.Stats())
	}
	saved := tbl.Stats().Saved
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodDelete, adminPrefix+"leasedel/192.0.2.77", nil)
	if err := (adminAPI{}).serve(w, r); err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	if h, ok := tbl.Inspect("192.0.2.77"); ok {
		t.Fatalf("after DELETE this instance still holds %+v", h)
	}
	serve(t, h, "192.0.2.77", "/")
	if got := tbl.Stats().Saved; got != saved {
		t.Fatalf("a request after DELETE was admitted from the old lease (%d admitted from leases, %d before)", got, saved)
	}
}
