package traefikplugin

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// shortIdle makes zones sleep after max(2 windows, 300 ms) and redis
// connections close after 500 ms idle, for one test.
func shortIdle(t *testing.T) {
	minimum, redisIdle := idleMinimum, redisIdleTimeout
	idleMinimum, redisIdleTimeout = 300*time.Millisecond, 500*time.Millisecond
	t.Cleanup(func() { idleMinimum, redisIdleTimeout = minimum, redisIdle })
}

// settle waits, bounded, until cond holds.
func settle(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// heapAlloc returns the live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// churn runs 1,000 configuration changes with fresh names, as a provider
// that names middlewares per deploy does: New, a few requests, and the
// handler dropped. Afterwards, once idle, every goroutine they started
// ends, the registries forget every name, and the heap is back near where
// it was.
func churn(t *testing.T, prefix string, config func() *Config) {
	t.Helper()
	const n = 1000
	names := make([]string, n)
	for i := range names {
		names[i] = prefix + strconv.Itoa(i) + "@docker"
	}
	t.Cleanup(func() {
		for _, name := range names {
			forget(name)
			forgetRedis(name)
		}
	})
	heapBefore := heapAlloc()
	before := runtime.NumGoroutine()
	clients := redisClients()
	var peak int
	for i, name := range names {
		h, err := newChecked(context.Background(), okHandler, config(), name)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3; j++ {
			if w := serve(h, "203.0.113."+strconv.Itoa(j)+":1", nil); w.Code != http.StatusOK {
				t.Fatalf("%s: request %d: %d", name, j, w.Code)
			}
		}
		if i == n-1 {
			peak = runtime.NumGoroutine()
		}
	}
	heapPeak := heapAlloc()
	registered := func() int {
		k := 0
		for _, name := range names {
			if registeredZone(name) {
				k++
			}
		}
		redisMu.Lock()
		for _, name := range names {
			if _, ok := redisOf[name]; ok {
				k++
			}
		}
		redisMu.Unlock()
		return k
	}
	if !settle(20*time.Second, func() bool { return runtime.NumGoroutine() <= before && registered() == 0 }) {
		t.Fatalf("goroutines: %d before, %d after %d middlewares (%d at the peak); %d registry entries left",
			before, runtime.NumGoroutine(), n, peak, registered())
	}
	if got := redisClients(); got > clients {
		t.Errorf("%d redis clients registered, %d before", got, clients)
	}
	heapAfter := heapAlloc()
	t.Logf("goroutines %d -> peak %d -> %d; heap %d KB -> peak %d KB -> %d KB",
		before, peak, runtime.NumGoroutine(), heapBefore>>10, heapPeak>>10, heapAfter>>10)
	// Generous: the test's own garbage and the runtime's caches move the
	// heap by a few MB; 1,000 zones kept would hold tens of MB.
	if heapAfter > heapBefore+8<<20 {
		t.Errorf("heap grew from %d KB to %d KB (peak %d KB)", heapBefore>>10, heapAfter>>10, heapPeak>>10)
	}
}

func TestRemovedMiddlewaresReleaseMemory(t *testing.T) {
	shortIdle(t)
	churn(t, "fresh-", func() *Config {
		c := validConfig()
		c.Window = "1s"
		c.Limit = 5
		return c
	})
}

func TestRemovedRedisMiddlewaresReleaseMemory(t *testing.T) {
	srv := redistest.Start(t)
	shortIdle(t)
	prefix := "churn" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	churn(t, "fresh-redis-", func() *Config {
		c := redisConfig(srv.Addr(), 5)
		c.Window = "1s"
		c.Redis.KeyPrefix = prefix // one redis block for all, as a provider's labels
		return c
	})
}

// A middleware that serves nothing while its zone sleeps and is forgotten
// is still right afterwards: the zone slept only once every window was
// over, its next request wakes it, and a reload finds its counts again.
func TestIdleMiddlewareWakes(t *testing.T) {
	shortIdle(t)
	const name = "idle-wakes@file"
	c := validConfig()
	c.Window = "1s"
	c.Limit = 2
	h := newMiddleware(t, c, name)
	z := middlewareOf(h).zone
	for i, want := range []int{200, 200, 429} {
		if got := serve(h, "203.0.113.7:1", nil).Code; got != want {
			t.Fatalf("limit 2 not enforced: request %d got %d, want %d", i+1, got, want)
		}
	}
	if !settle(15*time.Second, func() bool { return z.Stats().Asleep && !registeredZone(name) }) {
		t.Fatalf("the idle zone did not sleep: asleep %v, registered %v", z.Stats().Asleep, registeredZone(name))
	}
	// Its window is over: a fresh budget is right.
	for range 2 {
		if serve(h, "203.0.113.7:1", nil).Code != 200 {
			t.Fatal("the woken middleware denied")
		}
	}
	if z.Stats().Asleep || !settle(5*time.Second, func() bool { return registeredZone(name) }) {
		t.Fatal("the woken zone is not back in the registry")
	}
	h2, err := newChecked(context.Background(), okHandler, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if middlewareOf(h2).zone != z || serve(h2, "203.0.113.7:1", nil).Code != 429 {
		t.Error("a reload after the wake-up lost the counts")
	}
}

// A middleware serving requests never loses its zone, however long it
// serves; nor does one that New keeps asking for.
func TestBusyMiddlewareKeepsZone(t *testing.T) {
	shortIdle(t)
	const name = "busy@file"
	c := validConfig()
	c.Window = "1s"
	c.Limit = 1000
	h := newMiddleware(t, c, name)
	z := middlewareOf(h).zone
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		serve(h, "203.0.113.7:1", nil)
		if z.Stats().Asleep || !registeredZone(name) {
			t.Fatal("a zone in use slept")
		}
	}
	h2, err := newChecked(context.Background(), okHandler, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if middlewareOf(h2).zone != z {
		t.Error("a reload of a busy middleware made a new zone")
	}
}

// A redis middleware idle past the connection's idle timeout closes it;
// its next request dials again and Redis still holds its count.
func TestIdleRedisMiddlewareRedials(t *testing.T) {
	srv := redistest.Start(t)
	shortIdle(t)
	const name = "idle-redis@file"
	defer forgetRedis(name)
	c := redisConfig(srv.Addr(), 2) // a one-minute window: the zone stays
	h := newMiddleware(t, c, name)
	before := runtime.NumGoroutine()
	for i, want := range []int{200, 200, 429} {
		if got := serve(h, "203.0.113.7:1", nil).Code; got != want {
			t.Fatalf("limit 2 not enforced: request %d got %d, want %d", i+1, got, want)
		}
	}
	if !settle(10*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		t.Fatalf("the idle connection's goroutines stay: %d, %d before", runtime.NumGoroutine(), before)
	}
	if w := serve(h, "203.0.113.7:1", nil); w.Code != 429 {
		t.Errorf("after the idle close: %d, want 429 (the count is in Redis)", w.Code)
	}
	if st := middlewareOf(h).guard.Stats(); st.Failures != 0 {
		t.Errorf("the redial failed: %+v", st)
	}
}
