package caddymodule

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/windowlimit/windowlimit/internal/redisbench"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

func goRedisStore(t testing.TB, c redis.UniversalClient, cluster bool) *redisstore.Store {
	t.Helper()
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(newGoRedisRunner(c), redisstore.Settings{KeyPrefix: "gr:", Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func respStore(t testing.TB, opts resp.Options, cluster bool) *redisstore.Store {
	t.Helper()
	c, err := resp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, redisstore.Settings{KeyPrefix: "gr:", Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testZone(t testing.TB, name string, r ratelimit.Rule) *ratelimit.Zone {
	t.Helper()
	z, err := ratelimit.NewZone(name, r, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}

func takeOne(t testing.TB, s ratelimit.Store, z *ratelimit.Zone, key string) (ratelimit.Decision, error) {
	out := make([]ratelimit.Decision, 1)
	_, err := s.Take(context.Background(), time.Now(), []ratelimit.Item{{Zone: z, Key: key}}, out)
	return out[0], err
}

// TestGoRedisRunner: decisions, NOSCRIPT after SCRIPT FLUSH, and a reply
// that is not the script's.
func TestGoRedisRunner(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	s := goRedisStore(t, c, false)
	z := testZone(t, "gr", ratelimit.Rule{Window: time.Minute, Limit: 2})
	for i, want := range []bool{true, true, false} {
		d, err := takeOne(t, s, z, "k")
		if err != nil || d.Allowed != want {
			t.Fatalf("request %d: %+v, %v; want allowed %v", i, d, err, want)
		}
	}
	if err := c.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if d, err := takeOne(t, s, z, "other"); err != nil || !d.Allowed {
		t.Fatalf("after SCRIPT FLUSH: %+v, %v", d, err)
	}
	r := newGoRedisRunner(c)
	if _, err := r.Eval(context.Background(), "return 'x'", nil, nil); err == nil || !strings.Contains(err.Error(), "can't parse array") {
		t.Fatalf("string reply: %v", err)
	}
	if _, err := r.Eval(context.Background(), "return {'x'}", nil, nil); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("array of strings: %v", err)
	}
	// The connection those replies left unread is dropped, not reused.
	if res, err := r.Eval(context.Background(), "return {1, -2}", nil, nil); err != nil || len(res) != 2 || res[0] != 1 || res[1] != -2 {
		t.Fatalf("after the bad replies: %v, %v", res, err)
	}
}

// TestRedisExactMixedClients: three limiter instances, two on go-redis and
// one on shared/resp, hammer one key from many goroutines; exactly N are
// admitted. The window is an hour so no boundary passes during the test.
// -v prints the figures of README.md.
func TestRedisExactMixedClients(t *testing.T) {
	srv := redistest.Start(t)
	stores := []ratelimit.Store{
		goRedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 16}), false),
		goRedisStore(t, redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr()}}), false),
		respStore(t, resp.Options{Addrs: []string{srv.Addr()}, ReadTimeout: 2 * time.Second}, false),
	}
	hammer(t, stores, 400)
}

// TestRedisClusterClients: go-redis's ClusterClient and shared/resp in
// cluster mode share one limit on a three-master cluster.
func TestRedisClusterClients(t *testing.T) {
	addrs := redistest.Cluster(t)
	stores := []ratelimit.Store{
		goRedisStore(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}), true),
		respStore(t, resp.Options{Addrs: addrs, ReadTimeout: 2 * time.Second}, true),
	}
	hammer(t, stores, 200)
	// Two keys in different slots in one request.
	a := testZone(t, "a", ratelimit.Rule{Window: time.Hour, Limit: 1})
	b := testZone(t, "b", ratelimit.Rule{Window: time.Hour, Limit: 5})
	for _, s := range stores {
		out := make([]ratelimit.Decision, 2)
		items := []ratelimit.Item{{Zone: a, Key: "ip-" + time.Now().String()}, {Zone: b, Key: "user"}}
		if ok, err := s.Take(context.Background(), time.Now(), items, out); !ok || err != nil {
			t.Fatalf("cross-slot request: %v %v %+v", ok, err, out)
		}
	}
}

func hammer(t *testing.T, stores []ratelimit.Store, limit int64) {
	t.Helper()
	const workers, perWorker = 8, 30
	rule := ratelimit.Rule{Window: time.Hour, SubWindow: 6 * time.Minute, Limit: limit}
	var admitted int64
	var wg sync.WaitGroup
	for _, s := range stores {
		z := testZone(t, "mixed", rule) // one zone object per instance, same name
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(s ratelimit.Store) {
				defer wg.Done()
				out := make([]ratelimit.Decision, 1)
				items := []ratelimit.Item{{Zone: z, Key: "hot"}}
				for j := 0; j < perWorker; j++ {
					allowed, err := s.Take(context.Background(), time.Now(), items, out)
					if err != nil {
						t.Error(err)
						return
					}
					if allowed {
						atomic.AddInt64(&admitted, 1)
					}
				}
			}(s)
		}
	}
	wg.Wait()
	attempts := int64(len(stores) * workers * perWorker)
	t.Logf("%d instances, %d goroutines, %d attempts on one key: %d admitted, limit %d",
		len(stores), len(stores)*workers, attempts, admitted, limit)
	if attempts <= limit {
		t.Fatalf("%d attempts cannot exceed the limit %d", attempts, limit)
	}
	if admitted != limit {
		t.Fatalf("%d admitted, want exactly %d", admitted, limit)
	}
}

// BenchmarkRedisStoreGoRedis: decisions per second through go-redis.
func BenchmarkRedisStoreGoRedis(b *testing.B) {
	addr := redistest.BenchAddr(b)
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	store := goRedisStore(b, c, false)
	redisbench.Decisions(b, addr, store)
}

// A replaced client stays open for the requests already using it, and
// closing the runner closes it with the current one; a client offered
// after that is closed at once.
func TestGoRedisRunnerReplace(t *testing.T) {
	m := miniredis.RunT(t)
	ctx := context.Background()
	newClient := func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: m.Addr()}) }
	first, second, late := newClient(), newClient(), newClient()
	r := newGoRedisRunner(first)
	r.replace(second)
	if r.client() != second {
		t.Fatal("replace did not switch the client")
	}
	if err := first.Ping(ctx).Err(); err != nil {
		t.Fatalf("the replaced client was closed at once: %v", err)
	}
	r.Close()
	for name, c := range map[string]redis.UniversalClient{"replaced": first, "current": second} {
		if err := c.Ping(ctx).Err(); err != redis.ErrClosed {
			t.Errorf("%s client after Close: %v, want %v", name, err, redis.ErrClosed)
		}
	}
	r.replace(late)
	if err := late.Ping(ctx).Err(); err != redis.ErrClosed {
		t.Errorf("a client offered after Close: %v, want %v", err, redis.ErrClosed)
	}
}

// The go-redis runner prepares a zone's call on one key: redisstore.TakeKey
// runs it, counts the key, and after a SCRIPT FLUSH its NOSCRIPT goes to
// the store, which sends the script's text at once, with no failure for
// the guard.
func TestGoRedisPreparedCall(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	s := goRedisStore(t, c, false)
	g, err := guard.New(s, guard.Options{OnError: guard.FailDeny, NotCounted: redisstore.ErrOutOfMemory})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	z := testZone(t, "prep", ratelimit.Rule{Window: time.Hour, Limit: 4})
	kc := s.KeyCall(z, g)
	if kc == nil {
		t.Fatal("the store over go-redis has no prepared call")
	}
	ctx := context.Background()
	// The first request loads the script.
	if d, err := takeOne(t, s, z, "k"); err != nil || !d.Allowed || d.Remaining != 3 {
		t.Fatalf("the first request: %+v %v, want admitted with 3 remaining", d, err)
	}
	for i, want := range []int64{2, 1} {
		if d := redisstore.TakeKey(ctx, g, kc, z, "k", time.Now()); !d.Allowed || d.Remaining != want {
			t.Fatalf("prepared call %d: %+v, want admitted with %d remaining", i+1, d, want)
		}
	}
	// Another key, on a call (and go-redis command) the pool most likely
	// hands back: its own count, not k's.
	if d := redisstore.TakeKey(ctx, g, kc, z, "j", time.Now()); !d.Allowed || d.Remaining != 3 {
		t.Fatalf("a prepared call on another key: %+v, want 3 remaining", d)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := noScriptErrors(t, c)
	if d := redisstore.TakeKey(ctx, g, kc, z, "k", time.Now()); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("the store's answer to NOSCRIPT: %+v, want the third request admitted, none remaining", d)
	}
	// The prepared call's NOSCRIPT alone: the store's general call then
	// sends the text at once, not EVALSHA again first.
	if n := noScriptErrors(t, c) - before; n != 1 {
		t.Fatalf("%d NOSCRIPT replies after SCRIPT FLUSH, want the prepared call's alone", n)
	}
	if st := g.Stats(); st.Failures != 0 {
		t.Fatalf("guard stats %+v: NOSCRIPT counted as a failure", st)
	}
	if d, err := takeOne(t, s, z, "k"); err != nil || d.Allowed {
		t.Fatalf("a fourth request: %+v %v, want denied", d, err)
	}
}

// noScriptErrors returns the NOSCRIPT replies Redis has sent (INFO
// errorstats).
func noScriptErrors(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(info, "errorstat_NOSCRIPT:count=")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimRight(strings.SplitN(rest, "\n", 2)[0], "\r"))
	return n
}

// A prepared call's arguments survive their encoding, binary ones and
// colons included, and the runner's bound on what it keeps.
func TestGoRedisPreparedArgs(t *testing.T) {
	args := []string{"0", "take", "", "a:b", "\x00\x01:\xff", "12:34"}
	if got := decodeArgs(encodeArgs(args)); !slices.Equal(got, args) {
		t.Fatalf("decodeArgs(encodeArgs(%q)) = %q", args, got)
	}
	if got := decodeArgs("3:ab"); len(got) != 0 {
		t.Fatalf("a cut encoding decoded to %q, want nothing", got)
	}
	r := newGoRedisRunner(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	defer r.Close()
	for i := 0; i < 3*maxPrepared; i++ {
		_, tail := r.PrepareEvalSha("sha", []string{strconv.Itoa(i)})
		if p := r.prepared("sha", tail); len(p.args) != 1 || p.args[0] != strconv.Itoa(i) {
			t.Fatalf("prepared %d: %v", i, p.args)
		}
	}
	n := 0
	r.prep.Load().Range(func(any, any) bool { n++; return true })
	if n > maxPrepared {
		t.Fatalf("the runner keeps %d prepared calls, more than %d", n, maxPrepared)
	}
	// One dropped from the map is decoded again from its tail.
	_, tail := r.PrepareEvalSha("sha", []string{"first"})
	r.prep.Store(new(sync.Map))
	r.last.Store(nil)
	if p := r.prepared("sha", tail); len(p.args) != 1 || p.args[0] != "first" {
		t.Fatalf("a dropped prepared call: %v", p.args)
	}
}
