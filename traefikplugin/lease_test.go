package traefikplugin

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// TestRedisLeaseSetting: redis.lease is auto (also when empty) or off,
// in any case; anything else is an error at New naming the field.
func TestRedisLeaseSetting(t *testing.T) {
	for in, want := range map[string]bool{"": true, "auto": true, " AUTO ": true, "off": false, "Off": false} {
		c := validConfig()
		c.Redis = &RedisConfig{Lease: in}
		rs, err := c.redisSettings()
		if err != nil || rs.lease != want {
			t.Errorf("lease %q: %+v, %v; want lease %v", in, rs, err, want)
		}
	}
	for _, in := range []string{"on", "true", "0", "autox"} {
		c := validConfig()
		c.Redis = &RedisConfig{Endpoints: []string{"127.0.0.1:6379"}, Lease: in}
		_, err := newChecked(context.Background(), okHandler, c, "bad@file")
		if err == nil {
			forgetRedis("bad@file")
			t.Errorf("lease %q accepted", in)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `"bad@file"`) || !strings.Contains(msg, "redis.lease: unknown value "+`"`+in+`"`) {
			t.Errorf("lease %q: %v", in, err)
		}
	}
}

// awaitSubWindowStart returns at once when at least need is left of the
// current sub-window of length sub, else sleeps into the next.
func awaitSubWindowStart(sub, need time.Duration) {
	if left := sub - time.Duration(time.Now().UnixNano()%int64(sub)); left < need {
		time.Sleep(left + 10*time.Millisecond)
	}
}

// evalCalls returns how many script calls srv ran.
func evalCalls(t *testing.T, srv *redistest.Server) int64 {
	calls := redistest.Calls(t, srv.Addr())
	return calls["evalsha"] + calls["eval"]
}

// TestRedisLeaseCalls: a hot key's requests cost one script call each
// with lease off, far fewer with lease auto (the default), every one
// admitted with the X-RateLimit-Remaining a per-request decision gives;
// through serveRedis (a limit within the decimals table) and through
// takeFromStore (beyond it).
func TestRedisLeaseCalls(t *testing.T) {
	srv := redistest.Start(t)
	const n = 2000
	for _, limit := range []int{60000, 100000} {
		calls := map[string]int64{}
		for _, mode := range []string{"off", ""} {
			c := redisConfig(srv.Addr(), int64(limit))
			c.Redis.Lease = mode
			name := "lease-calls-" + mode + "-" + itoa(limit) + "@file"
			h := redisMiddleware(t, c, name)
			if m := middlewareOf(h); (m.lease != nil) != (mode == "") || (m.path == pathRedis) != (limit < 65536) {
				t.Fatalf("limit %d, lease %q: table %v, serveRedis %v", limit, mode, m.lease != nil, m.path == pathRedis)
			}
			// One sub-window (6s) for the whole run: across a boundary the
			// old lease's units count until they are given back, and the
			// remaining is lower than per-request decisions give.
			awaitSubWindowStart(6*time.Second, 3*time.Second)
			before := evalCalls(t, srv)
			for i := 1; i <= n; i++ {
				w := serve(h, "203.0.113.7:1", nil)
				if w.Code != 200 {
					t.Fatalf("limit %d, lease %q, request %d: %d", limit, mode, i, w.Code)
				}
				if got, want := w.Header().Get("X-RateLimit-Remaining"), limit-i; got != itoa(want) {
					t.Fatalf("limit %d, lease %q, request %d: remaining %s, want %d", limit, mode, i, got, want)
				}
			}
			calls[mode] = evalCalls(t, srv) - before
		}
		t.Logf("limit %d, %d requests on one key: %d script calls with lease off, %d with lease auto", limit, n, calls["off"], calls[""])
		if calls["off"] < n || calls[""]*20 > n {
			t.Errorf("limit %d: script calls: %d with lease off (want >= %d), %d with lease auto (want <= %d)", limit, calls["off"], n, calls[""], n/20)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// detachInstance makes the next New of name start afresh, as on another
// Traefik instance: a zone, redis client, guard and lease table of its
// own. The handlers made so far keep theirs, closed when the test ends.
func detachInstance(t *testing.T, name string) {
	registryMu.Lock()
	r := registry[name]
	delete(registry, name)
	registryMu.Unlock()
	redisMu.Lock()
	sr := redisByID[redisOf[name]]
	l := leaseOf[name]
	releaseIdleRedis(name)
	redisMu.Unlock()
	t.Cleanup(func() {
		if l != nil {
			l.table.Close()
		}
		if sr != nil {
			sr.guard.Close()
			sr.client.Close()
		}
		if r != nil {
			r.zone.Close()
		}
	})
}

// TestRedisLeaseTwoInstances: two instances on one Redis, concurrent
// clients of one key on both: together they admit no more than the limit,
// and exactly the limit once every lease is spent; leases were taken.
func TestRedisLeaseTwoInstances(t *testing.T) {
	srv := redistest.Start(t)
	const limit, name = 300, "lease-two@file"
	c := redisConfig(srv.Addr(), limit)
	a := redisMiddleware(t, c, name)
	detachInstance(t, name)
	b := redisMiddleware(t, c, name)
	ma, mb := middlewareOf(a), middlewareOf(b)
	if ma.lease == nil || mb.lease == nil || ma.lease == mb.lease || ma.guard == mb.guard {
		t.Fatal("the instances do not have lease tables and guards of their own")
	}
	var admitted int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		h := a
		if g%2 == 1 {
			h = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if serve(h, "203.0.113.7:1", nil).Code == http.StatusOK {
					atomic.AddInt64(&admitted, 1)
				}
			}
		}()
	}
	wg.Wait()
	if admitted > limit {
		t.Fatalf("800 concurrent requests on two instances: %d admitted, limit %d", admitted, limit)
	}
	concurrent := admitted
	// One at a time on each in turn: what a lease holds is spent.
	for i := 0; i < 400; i++ {
		h := a
		if i%2 == 1 {
			h = b
		}
		if serve(h, "203.0.113.7:1", nil).Code == http.StatusOK {
			admitted++
		}
	}
	sa, sb := ma.lease.Stats(), mb.lease.Stats()
	t.Logf("admitted %d concurrently, %d in all; leases a %+v, b %+v", concurrent, admitted, sa, sb)
	if admitted != limit {
		t.Errorf("admitted %d, want exactly the limit %d", admitted, limit)
	}
	// Which instance gets hot first is the scheduler's: the first to lease
	// may leave the other too little room for a lease of its own.
	if sa.Leases+sb.Leases == 0 || sa.Saved+sb.Saved == 0 {
		t.Errorf("no lease taken: a %+v, b %+v", sa, sb)
	}
}

// TestRedisLeaseCountStatus: a countStatus middleware decides every
// request in Redis: no table, one script call per request at least.
func TestRedisLeaseCountStatus(t *testing.T) {
	srv := redistest.Start(t)
	c := redisConfig(srv.Addr(), 100000)
	c.CountStatus = []string{"500-599"}
	h := redisMiddleware(t, c, "lease-count@file")
	if middlewareOf(h).lease != nil {
		t.Fatal("a countStatus middleware has a lease table")
	}
	before := evalCalls(t, srv)
	for i := 0; i < 100; i++ {
		if w := serve(h, "203.0.113.7:1", nil); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	if got := evalCalls(t, srv) - before; got < 100 {
		t.Errorf("100 countStatus requests: %d script calls", got)
	}
}

// TestRedisLeaseOverride: an overridden key leases at its own limit and
// is admitted exactly up to it; an exempt client is not counted.
func TestRedisLeaseOverride(t *testing.T) {
	srv := redistest.Start(t)
	c := redisConfig(srv.Addr(), 5)
	c.Overrides = []string{"203.0.113.7=200", "10.0.0.0/8=unlimited"}
	h := redisMiddleware(t, c, "lease-override@file")
	m := middlewareOf(h)
	before := evalCalls(t, srv)
	var ok int
	for i := 1; i <= 250; i++ {
		w := serve(h, "203.0.113.7:1", nil)
		if w.Code == 200 {
			ok++
			if got := w.Header().Get("X-RateLimit-Limit"); got != "200" {
				t.Fatalf("request %d: limit %q", i, got)
			}
			if got := w.Header().Get("X-RateLimit-Remaining"); got != itoa(200-i) {
				t.Fatalf("request %d: remaining %q, want %d", i, got, 200-i)
			}
		}
	}
	if ok != 200 || m.lease.Stats().Saved == 0 {
		t.Errorf("overridden key: %d admitted (want 200), %+v", ok, m.lease.Stats())
	}
	t.Logf("250 requests of the overridden key: %d script calls, %+v", evalCalls(t, srv)-before, m.lease.Stats())
	before = evalCalls(t, srv)
	for i := 0; i < 50; i++ {
		if serve(h, "10.1.2.3:1", nil).Code != 200 {
			t.Fatal("exempt client denied")
		}
	}
	if got := evalCalls(t, srv) - before; got != 0 {
		t.Errorf("exempt client: %d script calls", got)
	}
}

// TestRedisLeaseReload: New with the same configuration shares the
// name's table; a changed rule or lease off replaces it, closed.
func TestRedisLeaseReload(t *testing.T) {
	srv := redistest.Start(t)
	const name = "lease-reload@file"
	c := redisConfig(srv.Addr(), 1000)
	h1 := redisMiddleware(t, c, name)
	h2, err := newChecked(context.Background(), okHandler, c, name)
	if err != nil {
		t.Fatal(err)
	}
	t1 := middlewareOf(h1).lease
	if t1 == nil || middlewareOf(h2).lease != t1 {
		t.Fatal("a reload with the same configuration made a new table")
	}
	c.Limit = 999
	h3, err := newChecked(context.Background(), okHandler, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if t3 := middlewareOf(h3).lease; t3 == nil || t3 == t1 {
		t.Fatal("a changed rule kept the table")
	}
	c.Redis.Lease = "off"
	h4, err := newChecked(context.Background(), okHandler, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if middlewareOf(h4).lease != nil {
		t.Fatal("lease off kept a table")
	}
	redisMu.Lock()
	_, kept := leaseOf[name]
	redisMu.Unlock()
	if kept {
		t.Error("lease off left the name's table registered")
	}
}
