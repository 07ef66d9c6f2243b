package lease

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/redisstore"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// realFleet is n instances on the real clock sharing one Redis, each with
// its own client, guard and table, as n proxies are. The client waits a
// minute for a reply: a call that timed out after Redis counted it would
// be a unit neither admitted nor held, and a busy machine delays replies
// by more than a second. A dead Redis refuses at once.
func realFleet(t *testing.T, addr string, r ratelimit.Rule, n int, policy guard.FailurePolicy) ([]*Table, []*guard.Guard) {
	t.Helper()
	z, err := ratelimit.NewZone("real", r, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	var tables []*Table
	var guards []*guard.Guard
	for i := 0; i < n; i++ {
		c, err := resp.New(resp.Options{Addrs: []string{addr}, ReadTimeout: time.Minute, DialTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		s, err := redisstore.New(c, redisstore.Settings{KeyPrefix: "real:"})
		if err != nil {
			t.Fatal(err)
		}
		g, err := guard.NewLogged(s, guard.Options{OnError: policy, Store: "redis", NotCounted: redisstore.ErrOutOfMemory}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.Close)
		tb, err := NewTable(z, g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tb.Close)
		tables, guards = append(tables, tb), append(guards, g)
	}
	return tables, guards
}

// TestConcurrentInstancesExact: three instances on the real clock, 64
// goroutines each on one key, a fixed window of a day with a limit of
// 5,000 (one window for the whole test, however slowly it runs; a
// minute's could end mid-test): exactly 5,000 admitted, however
// the requests interleave with lease calls in flight, and far fewer calls
// than requests.
func TestConcurrentInstancesExact(t *testing.T) {
	srv := redistest.Start(t)
	r := ratelimit.Rule{Window: 24 * time.Hour, Limit: 5000, Algorithm: ratelimit.Fixed}
	tables, guards := realFleet(t, srv.Addr(), r, 3, guard.FailDeny)
	before := scriptCalls(t, srv)
	var admitted, denied int64
	var wg sync.WaitGroup
	for _, tb := range tables {
		for g := 0; g < 64; g++ {
			wg.Add(1)
			go func(tb *Table) {
				defer wg.Done()
				for i := 0; i < 60; i++ {
					if Take(context.Background(), tb, "hot", 0, time.Now()).Allowed {
						atomic.AddInt64(&admitted, 1)
					} else {
						atomic.AddInt64(&denied, 1)
					}
				}
			}(tb)
		}
	}
	wg.Wait()
	for i, g := range guards {
		if n := g.Stats().Failures; n > 0 {
			t.Fatalf("instance %d: %d calls to Redis failed, each decided by the policy (deny) whether Redis counted it or not", i, n)
		}
	}
	calls := scriptCalls(t, srv) - before
	t.Logf("%d requests: %d admitted, %d denied, %d script calls", admitted+denied, admitted, denied, calls)
	if calls*4 > admitted+denied {
		t.Fatalf("%d calls for %d requests", calls, admitted+denied)
	}
	if admitted > r.Limit {
		t.Fatalf("admitted %d, over the limit %d", admitted, r.Limit)
	}
	// The requests outnumber the limit, so Redis counted it all: what was
	// admitted and what the leases still hold, unspent, when the load
	// stops (an instance whose clients stopped keeps its lease until its
	// sub-window ends).
	var held int64
	for _, tb := range tables {
		if h, ok := tb.Inspect("hot"); ok {
			held += h.Units
		}
	}
	if admitted+held != r.Limit {
		t.Fatalf("admitted %d and %d held in leases, want the limit %d: denied while units were free", admitted, held, r.Limit)
	}
	// Close gives back what the leases hold: then Redis counts exactly
	// what was admitted.
	for _, tb := range tables {
		tb.Close()
	}
	// Asked of Redis itself: the instances' caches of denials hold until
	// their Retry-After, given back units or not.
	c, err := resp.New(resp.Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	store, err := redisstore.New(c, redisstore.Settings{KeyPrefix: "real:"})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]ratelimit.Decision, 1)
	if _, err := store.Take(context.Background(), time.Now(), []ratelimit.Item{{Zone: tables[0].Zone(), Key: "hot"}}, out); err != nil {
		t.Fatal(err)
	}
	if want := r.Limit - admitted - 1; held > 0 && out[0].Remaining != want {
		left := out[0]
		t.Fatalf("after Close Redis has %d remaining, want %d: the %d unspent units not given back", left.Remaining, want, held)
	}
}

// TestRedisDownMidLease: when Redis dies, the units in hand are spent
// until they expire, then the failure policy decides (deny here); the
// lease never outlives its sub-window. The table's clock is the test's,
// so that a slow machine does not run the lease out while it is spent.
func TestRedisDownMidLease(t *testing.T) {
	srv := redistest.Start(t)
	r := ratelimit.Rule{Window: 4 * time.Second, SubWindow: time.Second, Limit: 100000}
	tables, _ := realFleet(t, srv.Addr(), r, 1, guard.FailDeny)
	tb := tables[0]
	// Start early in a sub-window (1s), so that the lease taken below has
	// most of it to run: a lease taken in its sub-window's last
	// milliseconds ends before it is spent.
	if left := time.Second - time.Duration(time.Now().UnixNano()%int64(time.Second)); left < 700*time.Millisecond {
		time.Sleep(left + 10*time.Millisecond)
	}
	var clock atomic.Int64 // UnixNano: the table's time, which the test moves
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	tb.now = now
	var held Held
	for i := 0; i < 200; i++ {
		if d := Take(context.Background(), tb, "hot", 0, now()); !d.Allowed {
			t.Fatalf("request %d denied with Redis up", i)
		}
		if h, ok := tb.Inspect("hot"); ok && h.Units > 5 {
			held = h
			break
		}
	}
	if held.Units == 0 {
		t.Fatal("no lease after 200 requests on one key")
	}
	srv.Kill()
	for spent := int64(0); spent < held.Units; spent++ {
		if !Take(context.Background(), tb, "hot", 0, now()).Allowed {
			t.Fatalf("denied after %d of %d units in hand, %v before the lease ends", spent, held.Units, held.ExpiresIn)
		}
	}
	clock.Add(int64(held.ExpiresIn + time.Millisecond))
	if d := Take(context.Background(), tb, "hot", 0, now()); d.Allowed {
		t.Fatalf("admitted with Redis down after the lease ended: %+v (on_store_error deny)", d)
	}
}

// scriptCalls reads how many EVALSHA and EVAL calls the server ran.
func scriptCalls(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	var n int64
	for _, line := range strings.Split(strings.Join(srv.Do(t, "INFO", "commandstats"), "\n"), "\n") {
		line = strings.TrimSpace(line)
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if len(line) > len(cmd) && line[:len(cmd)] == cmd {
				var x int64
				for _, c := range line[len(cmd):] {
					if c < '0' || c > '9' {
						break
					}
					x = x*10 + int64(c-'0')
				}
				n += x
			}
		}
	}
	return n
}

// TestRedisRestartMidLease: Redis restarts (no persistence: every count is
// gone, and the script too) while an instance holds a lease: a key Redis
// lost, which is a reset. The units in hand are spent until the next
// lease call, which finds the key in another generation: the lease ends, and
// what it spent is counted in the new generation. So the window after the
// restart admits at most the limit (one fresh budget, never more), less
// at most what the lease spent before the restart (the safe side).
func TestRedisRestartMidLease(t *testing.T) {
	srv := redistest.Start(t)
	// A day's fixed window: one window for the whole test, however slowly
	// it runs.
	r := ratelimit.Rule{Window: 24 * time.Hour, Limit: 1000, Algorithm: ratelimit.Fixed}
	tables, guards := realFleet(t, srv.Addr(), r, 1, guard.FailDeny)
	tb := tables[0]
	for i := 0; i < 100; i++ {
		Take(context.Background(), tb, "hot", 0, time.Now())
	}
	held, ok := tb.Inspect("hot")
	if !ok {
		t.Fatal("no lease after 100 requests on one key")
	}
	granted := int64(tb.Stats().Granted)
	srv.Kill()
	srv.Restart()
	var admitted int64
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 3000 && time.Now().Before(deadline); i++ {
		d := Take(context.Background(), tb, "hot", 0, time.Now())
		if d.Allowed {
			admitted++
		}
		if guards[0].Stats().Open {
			// The old connection broke: the breaker decides (deny) until
			// its probe finds Redis again.
			i--
			time.Sleep(time.Millisecond)
		}
	}
	spentBefore := granted - held.Units
	t.Logf("after the restart: admitted %d of a limit of %d; the lease had spent %d of %d units before it", admitted, r.Limit, spentBefore, granted)
	if admitted > r.Limit || admitted < r.Limit-spentBefore {
		t.Fatalf("after the restart admitted %d, want from %d to %d (the limit, less the %d units the lease spent before it)", admitted, r.Limit-spentBefore, r.Limit, spentBefore)
	}
	if n := tb.Stats().EndedByReset; n == 0 {
		t.Fatalf("no lease was ended for its key's new generation (Stats.EndedByReset = 0)")
	}
	tb.Close()
	if d := Take(context.Background(), tb, "hot", 0, time.Now()); d.Allowed {
		t.Fatalf("after the window was used up and the leases given back, a request was admitted: %+v", d)
	}
}

// replyLost is a ScriptRunner whose reply is lost when the caller's
// context has ended by the time Redis answered: Redis ran the script.
type replyLost struct{ redisstore.ScriptRunner }

func (r replyLost) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	res, err := r.ScriptRunner.EvalSha(ctx, sha, keys, args)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return res, err
}

// TestLeaseOutlivesClient: a client that leaves while its request's call
// asks for a lease does not make the units Redis counts for it be lost:
// the call is not cancelled with the client, and the lease is kept.
func TestLeaseOutlivesClient(t *testing.T) {
	srv := redistest.Start(t)
	// A day's fixed window: one window for the whole test, however slowly
	// it runs.
	r := ratelimit.Rule{Window: 24 * time.Hour, Limit: 1000, Algorithm: ratelimit.Fixed}
	z, err := ratelimit.NewZone("gone", r, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	c, err := resp.New(resp.Options{Addrs: []string{srv.Addr()}, ReadTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := redisstore.New(replyLost{c}, redisstore.Settings{KeyPrefix: "gone:"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.NewLogged(s, guard.Options{Store: "redis", NotCounted: redisstore.ErrOutOfMemory}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tb, err := NewTable(z, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < HotAfter-1; i++ {
		Take(context.Background(), tb, "hot", 0, time.Now())
	}
	if _, ok := tb.Inspect("hot"); ok {
		t.Fatal("a lease before the key was hot")
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	Take(gone, tb, "hot", 0, time.Now())
	held, ok := tb.Inspect("hot")
	if !ok {
		t.Fatal("the request whose client left asked for a lease, and none is held: what Redis counted for it is lost")
	}
	tb.Close()
	d := Take(context.Background(), tb, "hot", 0, time.Now())
	if want := r.Limit - HotAfter - 1; d.Remaining != want {
		t.Fatalf("after the lease of %d was given back Redis has %d remaining, want %d", held.Units, d.Remaining, want)
	}
}

// TestResetMidLeaseTwoInstances: a hot key on two instances, each holding
// a lease, is reset, as Caddy's admin API does (the instance that serves
// the DELETE forgets its lease, and the store resets the key, keeping
// counted in the fresh count the units the other's leases took of the
// sub-window, spent or not), or lost by Redis (no instance knows). Then the
// first instance uses the fresh count up, 8 goroutines at once, and only
// then does the second spend what its lease of before holds: the worst
// order for a reset. After an operator's reset the window admits at most
// the limit, as a fresh key would, and at least the limit less what the
// fresh count started with (Held.Granted of the second instance's lease).
// After a loss, a lease of before ends at its holder's next call, which
// counts what it spent in the fresh count; what it spent before that call,
// the fresh count used up by then, goes over the limit, by at most what it
// held: the test prints by how much.
func TestResetMidLeaseTwoInstances(t *testing.T) {
	for _, admin := range []bool{true, false} {
		name := "lost"
		if admin {
			name = "admin"
		}
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			r := ratelimit.Rule{Window: time.Minute, Limit: 2000, Algorithm: ratelimit.Strict}
			tables, guards := realFleet(t, srv.Addr(), r, 2, guard.FailDeny)
			for i := 0; i < 400; i++ {
				Take(context.Background(), tables[i%2], "hot", 0, time.Now())
			}
			var held, carried int64
			for i, tb := range tables {
				h, ok := tb.Inspect("hot")
				if !ok {
					t.Fatalf("instance %d holds no lease after 200 requests on one key", i)
				}
				if h.Granted < h.Units {
					t.Fatalf("instance %d: %d units granted in the sub-window, fewer than the %d it holds", i, h.Granted, h.Units)
				}
				held += h.Units
				if i > 0 {
					carried += h.Granted
				}
			}
			if admin {
				own := tables[0].Forget("hot")
				store := guards[0].Remote().(*redisstore.Store)
				if _, err := store.Forget(context.Background(), tables[0].Zone(), "hot", time.Now(), own); err != nil {
					t.Fatal(err)
				}
			} else {
				srv.Do(t, "DEL", "real:real:{hot}")
			}
			var admitted int64
			for _, tb := range tables {
				var wg sync.WaitGroup
				for g := 0; g < 8; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < 500; i++ {
							if Take(context.Background(), tb, "hot", 0, time.Now()).Allowed {
								atomic.AddInt64(&admitted, 1)
							}
						}
					}()
				}
				wg.Wait()
			}
			ended := tables[0].Stats().EndedByReset + tables[1].Stats().EndedByReset
			t.Logf("%s reset with %d units in leases: the window after it admitted %d of 8000 requests at a limit of %d (%d over); %d leases ended for the new count", name, held, admitted, r.Limit, max(admitted-r.Limit, 0), ended)
			bound := r.Limit
			if !admin {
				bound += held
			}
			if admitted > bound {
				t.Fatalf("the window after the reset admitted %d, over %d: leases of before were spent on top of the fresh budget", admitted, bound)
			}
			// The fresh count starts with what the second instance's
			// leases took of the sub-window, spent or not: Redis cannot
			// tell them apart. A loss starts it at 0.
			least, short := r.Limit-held, "the limit less the units the leases held"
			if admin {
				least, short = r.Limit-carried, "the limit less the units the second instance's leases took of the sub-window"
			}
			if admitted < least {
				t.Fatalf("the window after the reset admitted %d, want at least %d (%s)", admitted, least, short)
			}
		})
	}
}
