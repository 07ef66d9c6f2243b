package traefikplugin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// slowService records, per X-Key, the most requests it held at once.
type slowService struct {
	mu        sync.Mutex
	now, most map[string]int
	hold      func()
}

func newSlowService(hold func()) *slowService {
	return &slowService{now: map[string]int{}, most: map[string]int{}, hold: hold}
}

func (s *slowService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := r.Header.Get("X-Key")
	s.mu.Lock()
	s.now[k]++
	s.most[k] = max(s.most[k], s.now[k])
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.now[k]--
		s.mu.Unlock()
	}()
	s.hold()
}

func (s *slowService) mostOf(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most[k]
}

// newInFlight returns the middleware name of options, as Traefik decodes
// labels (every value a string), in front of next.
func newInFlight(t *testing.T, name string, options map[string]any, next http.Handler) http.Handler {
	t.Helper()
	forget(name)
	t.Cleanup(func() {
		forget(name)
		forgetRedis(name)
		inFlightFor(name, nil, &Config{}, settings{}, false)
	})
	h, err := newChecked(context.Background(), next, &Config{Options: options}, name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func keyed(h http.Handler, key string) *httptest.ResponseRecorder {
	return serve(h, "203.0.113.7:4711", http.Header{"X-Key": {key}})
}

// TestInFlightAlone: inFlight 3 alone, 12 clients on one key, a slow
// service: it held exactly 3 at most; another key is unaffected; a
// refusal has Retry-After 1 and the policy of concurrent requests.
func TestInFlightAlone(t *testing.T) {
	svc := newSlowService(func() { time.Sleep(20 * time.Millisecond) })
	h := newInFlight(t, "slots@file", map[string]any{
		"inFlight": "3", "headers": "both",
		"sourceCriterion": map[string]any{"requestHeaderName": "X-Key"},
	}, svc)
	var refused atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < 12; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				w := keyed(h, "a")
				if w.Code == 429 {
					refused.Add(1)
					if w.Header().Get("Retry-After") != "1" || w.Header().Get("RateLimit-Policy") != `"slots@file";q=3;qu="concurrent-requests"` {
						t.Errorf("refusal headers %v", w.Header())
					}
				}
			}
		}()
	}
	for i := 0; i < 5; i++ {
		if w := keyed(h, "b"); w.Code != 200 {
			t.Errorf("another key, one at a time: %d", w.Code)
		}
	}
	wg.Wait()
	if got := svc.mostOf("a"); got != 3 {
		t.Fatalf("the service held %d of the key at once, want exactly 3 (%d refused)", got, refused.Load())
	}
}

// TestInFlightWithRateTraefik: beside window and limit, a request refused
// a slot counts nothing, and one the rate refuses frees its slot at once.
func TestInFlightWithRateTraefik(t *testing.T) {
	srv := redistest.Start(t)
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) { testInFlightWithRate(t, store, srv) })
	}
}

func testInFlightWithRate(t *testing.T, store string, srv *redistest.Server) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	svc := newSlowService(func() {
		select {
		case started <- struct{}{}:
		default:
		}
		select { // bounded, so that a broken limit fails rather than hangs
		case <-release:
		case <-time.After(3 * time.Second):
		}
	})
	name := "mixed-" + store + "@file"
	options := map[string]any{
		"inFlight": 1, "window": "1m", "limit": 2,
		"sourceCriterion": map[string]any{"requestHeaderName": "X-Key"},
	}
	if store == "redis" {
		options["redis"] = map[string]any{"endpoints": []any{srv.Addr()}, "keyPrefix": "mixed:"}
	}
	h := newInFlight(t, name, options, svc)
	// released waits until the slots of k are free: in Redis the
	// releases go in the background.
	released := func() {
		t.Helper()
		waitSlotsHeld(t, inflightByName[name].l, 0)
		if store != "redis" {
			return
		}
		for deadline := time.Now().Add(2 * time.Second); srv.Do(t, "EXISTS", "mixed:"+name+":{k}:slots")[0] != "0"; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the key's slots are still in Redis 2s after its requests ended")
			}
		}
	}
	done := make(chan int)
	go func() { done <- keyed(h, "k").Code }()
	<-started
	for i := 0; i < 4; i++ {
		if w := keyed(h, "k"); w.Code != 429 || w.Header().Get("Retry-After") != "1" {
			t.Fatalf("while the slot is held: %d with Retry-After %q, want a refused slot's 429", w.Code, w.Header().Get("Retry-After"))
		}
	}
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("first: %d", code)
	}
	released()
	if w := keyed(h, "k"); w.Code != 200 {
		t.Fatalf("second of the window: %d, want 200 (refused slots counted nothing)", w.Code)
	}
	released()
	if w := keyed(h, "k"); w.Code != 429 || w.Header().Get("Retry-After") == "1" {
		t.Fatalf("third: %d with Retry-After %q, want the rate's 429", w.Code, w.Header().Get("Retry-After"))
	}
	released()
	if w := keyed(h, "k"); w.Code != 429 {
		t.Fatalf("fourth: %d", w.Code)
	}
	released()
}

// waitSlotsHeld waits until l's requests hold n slots (releases to Redis
// go in the background), for at most 2s.
func waitSlotsHeld(t *testing.T, l interface{ Held() int64 }, n int64) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); l.Held() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots held, want %d", l.Held(), n)
		}
	}
}

// TestInFlightWithRateRedisCallsTraefik: a rate beside inFlight on Redis
// costs two script calls a request: the slot with the decision, and the
// slot's release.
func TestInFlightWithRateRedisCallsTraefik(t *testing.T) {
	srv := redistest.Start(t)
	h := newInFlight(t, "calls@file", map[string]any{
		"inFlight": 5, "window": "1m", "limit": 1000,
		"sourceCriterion": map[string]any{"requestHeaderName": "X-Key"},
		"redis":           map[string]any{"endpoints": []any{srv.Addr()}, "keyPrefix": "calls:"},
	}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	keyed(h, "warm") // loads the scripts
	l := inflightByName["calls@file"].l
	waitSlotsHeld(t, l, 0)
	time.Sleep(100 * time.Millisecond) // the warm release, sent in the background
	before := srv.ScriptCalls(t)
	const n = 20
	for i := 0; i < n; i++ {
		if w := keyed(h, "k"); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	for deadline := time.Now().Add(2 * time.Second); srv.ScriptCalls(t)-before < 2*n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // any call more would show now
	if got := srv.ScriptCalls(t) - before; got != 2*n {
		t.Fatalf("%d script calls for %d requests, want 2 a request", got, n)
	}
}

// TestInFlightRedisTraefik: with redis the slots are in Redis, at most n,
// and free once the requests end.
func TestInFlightRedisTraefik(t *testing.T) {
	srv := redistest.Start(t)
	svc := newSlowService(func() { time.Sleep(20 * time.Millisecond) })
	h := newInFlight(t, "rslots@file", map[string]any{
		"inFlight": "3", "inFlightTTL": "5s",
		"sourceCriterion": map[string]any{"requestHeaderName": "X-Key"},
		"redis":           map[string]any{"endpoints": []any{srv.Addr()}, "keyPrefix": "t:"},
	}, svc)
	var wg sync.WaitGroup
	for c := 0; c < 12; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				keyed(h, "a")
			}
		}()
	}
	wg.Wait()
	if got := svc.mostOf("a"); got != 3 {
		t.Fatalf("the service held %d at once, want exactly 3", got)
	}
	deadline := time.Now().Add(2 * time.Second)
	for srv.Do(t, "EXISTS", "t:rslots@file:{a}:slots")[0] != "0" {
		if time.Now().After(deadline) {
			t.Fatal("the key's slots are still in Redis 2s after its requests ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInFlightOptionErrors: each bad value is refused with its option.
func TestInFlightOptionErrors(t *testing.T) {
	for _, c := range []struct {
		options map[string]any
		want    string
	}{
		{map[string]any{"inFlight": "-1"}, "inFlight"},
		{map[string]any{"inFlight": "many"}, "inFlight"},
		{map[string]any{"inFlight": 2, "inFlightTTL": "500ms"}, "inFlightTTL"},
		{map[string]any{"inFlight": 2, "inFlightTTL": "soon"}, "inFlightTTL"},
		{map[string]any{"window": "1m", "limit": 5, "inFlightTTL": "10s"}, "inFlightTTL: applies only with inFlight"},
		{map[string]any{"inFlight": 2, "subWindow": "1s"}, "subWindow: needs window and limit"},
		{map[string]any{"inFlight": 2, "headers": "fancy"}, "headers"},
		{map[string]any{"inFlight": 2, "window": "1m"}, "limit"},
		{map[string]any{"inFlight": 2, "inFlightTTL": "10s"}, "inFlightTTL: applies only with a redis block"},
	} {
		_, err := newChecked(context.Background(), okHandler, &Config{Options: c.options}, "bad@file")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %q", c.options, err, c.want)
		}
	}
}

// TestInFlightPanicFreesSlot: a service that panics frees its slot, as
// Traefik's recovery middleware then answers 500.
func TestInFlightPanicFreesSlot(t *testing.T) {
	h := newInFlight(t, "panic@file", map[string]any{
		"inFlight":        1,
		"sourceCriterion": map[string]any{"requestHeaderName": "X-Key"},
	}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Panic") != "" {
			panic(http.ErrAbortHandler)
		}
	}))
	func() {
		defer func() { recover() }()
		serve(h, "203.0.113.7:4711", http.Header{"X-Key": {"k"}, "X-Panic": {"1"}})
	}()
	if w := keyed(h, "k"); w.Code != 200 {
		t.Fatalf("after a panic: %d, want 200 (its slot freed)", w.Code)
	}
}

// TestInFlightRedisClusterTraefik: through shared/resp's Cluster client,
// 12 clients on each of 4 keys leave exactly 3 of a key at the service.
func TestInFlightRedisClusterTraefik(t *testing.T) {
	addrs := redistest.Cluster(t)
	endpoints := make([]any, len(addrs))
	for i, a := range addrs {
		endpoints[i] = a
	}
	for _, rate := range []bool{false, true} {
		t.Run("rate "+strconv.FormatBool(rate), func(t *testing.T) {
			options := map[string]any{
				"inFlight":        3,
				"sourceCriterion": map[string]any{"requestHeaderName": "X-Key"},
				"redis":           map[string]any{"endpoints": endpoints, "keyPrefix": "tc:"},
			}
			if rate {
				// The slot is taken in the rate's call.
				options["window"], options["limit"] = "1m", 100000
			}
			testInFlightCluster(t, "cslots-"+strconv.FormatBool(rate)+"@file", options)
		})
	}
}

func testInFlightCluster(t *testing.T, name string, options map[string]any) {
	svc := newSlowService(func() { time.Sleep(20 * time.Millisecond) })
	h := newInFlight(t, name, options, svc)
	var wg sync.WaitGroup
	for k := 0; k < 4; k++ {
		for c := 0; c < 12; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 3; i++ {
					keyed(h, "key"+string(rune('a'+k)))
				}
			}()
		}
	}
	wg.Wait()
	for k := 0; k < 4; k++ {
		if m := svc.mostOf("key" + string(rune('a'+k))); m != 3 {
			t.Errorf("key %d: the service held %d at once, want exactly 3", k, m)
		}
	}
}

// TestInFlightReloadKeepsSlots: a reload (New again with the same
// settings) keeps the slots of the requests still running.
func TestInFlightReloadKeepsSlots(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{})
	options := map[string]any{"inFlight": 1, "sourceCriterion": map[string]any{"requestHeaderName": "X-Key"}}
	old := newInFlight(t, "reload@file", options, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(started)
		<-release
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		keyed(old, "k")
	}()
	<-started
	reloaded, err := newChecked(context.Background(), okHandler, &Config{Options: options}, "reload@file")
	if err != nil {
		t.Fatal(err)
	}
	if w := keyed(reloaded, "k"); w.Code != 429 {
		t.Fatalf("after a reload, while the old request runs: %d, want 429", w.Code)
	}
	close(release)
	<-done
	if w := keyed(reloaded, "k"); w.Code != 200 {
		t.Fatalf("once it ended: %d, want 200", w.Code)
	}
}

// TestInFlightDryRunTraefik: in dry run a request past n reaches the
// service, without a slot.
func TestInFlightDryRunTraefik(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{})
	var reached atomic.Int64
	h := newInFlight(t, "dry@file", map[string]any{"inFlight": 1, "dryRun": true,
		"sourceCriterion": map[string]any{"requestHeaderName": "X-Key"}}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		if reached.Add(1) == 1 { // the first holds its slot
			close(started)
			<-release
		}
	}))
	go keyed(h, "k")
	<-started
	defer close(release)
	if w := keyed(h, "k"); w.Code != 200 || reached.Load() != 2 || w.Header().Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("dry run past n: %d, reached %d, remaining %q", w.Code, reached.Load(), w.Header().Get("X-Ratelimit-Remaining"))
	}
}

// TestInFlightUnlimitedOverrideTakesNoSlot: a client whose override is
// unlimited takes no slot: with inFlight 1, its second request passes
// while its first is held, where another client's is refused.
func TestInFlightUnlimitedOverrideTakesNoSlot(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	svc := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			entered <- struct{}{}
			<-release
		}
	})
	h := newInFlight(t, "exempt-slots@file", map[string]any{
		"window": "1m", "limit": "100", "inFlight": "1",
		"overrides": "198.51.100.7=unlimited",
	}, svc)
	for _, tc := range []struct {
		remote string
		want   int
	}{{"198.51.100.7:4711", 200}, {"203.0.113.7:4711", 429}} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			serve(h, tc.remote, http.Header{"X-Hold": {"1"}})
		}()
		<-entered
		if got := serve(h, tc.remote, nil).Code; got != tc.want {
			t.Errorf("%s: a second request while the first is held: %d, want %d", tc.remote, got, tc.want)
		}
		close(release)
		<-done
		release = make(chan struct{})
	}
}
