package lease

import (
	"context"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// epoch is the simulated clock's start: a time in the middle of a
// sub-window, so that the first lease does not last a whole one.
var epoch = time.UnixMicro(1_760_000_000_123_457)

// simClock is a simulated clock with timers: the tables' leases expire on
// it, and the script counts at its time plus skew (the Redis server's
// clock, which tests step).
type simClock struct {
	now    time.Time
	skew   time.Duration
	timers []simTimer
}

type simTimer struct {
	at      time.Time
	f       func()
	stopped *bool
}

func (c *simClock) Now() time.Time { return c.now }

// after is Table.after on the simulated clock.
func (c *simClock) after(d time.Duration, f func()) func() bool {
	stopped := new(bool)
	tm := simTimer{at: c.now.Add(d), f: f, stopped: stopped}
	i := sort.Search(len(c.timers), func(i int) bool { return c.timers[i].at.After(tm.at) })
	c.timers = append(c.timers, simTimer{})
	copy(c.timers[i+1:], c.timers[i:])
	c.timers[i] = tm
	return func() bool { was := *stopped; *stopped = true; return !was }
}

// advance moves the clock to t, firing the timers due by then in order.
func (c *simClock) advance(t time.Time) {
	for len(c.timers) > 0 && !c.timers[0].at.After(t) {
		tm := c.timers[0]
		c.timers = c.timers[1:]
		if tm.at.After(c.now) {
			c.now = tm.at
		}
		if !*tm.stopped {
			*tm.stopped = true
			tm.f()
		}
	}
	if t.After(c.now) {
		c.now = t
	}
}

// serverRunner is the simulated Redis server's side of the script calls:
// it counts them, moves the time the script counts at (the caller's,
// CallerTime) by the server clock's skew, which tests step, and expires
// the keys on that time (simExpiry), not on the real server's clock.
type serverRunner struct {
	*simExpiry
	clock *simClock
	calls int64 // atomic: leases give back from goroutines of their own
}

func (c *serverRunner) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	atomic.AddInt64(&c.calls, 1)
	return c.evalSha(ctx, sha, keys, c.skewed(args))
}

func (c *serverRunner) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	return c.eval(ctx, script, keys, c.skewed(args))
}

// Calls returns how many script calls reached the server.
func (c *serverRunner) Calls() int64 { return atomic.LoadInt64(&c.calls) }

func (c *serverRunner) skewed(args []string) []string {
	if len(args) == 0 || args[0] == "0" || c.clock.skew == 0 {
		return args
	}
	us, _ := strconv.ParseInt(args[0], 10, 64)
	out := append([]string{strconv.FormatInt(us+c.clock.skew.Microseconds(), 10)}, args[1:]...)
	return out
}

// fleet is n proxy instances on one simulated clock, sharing one Redis.
type fleet struct {
	client *resp.Client
	prefix string
	clock  *simClock
	runner *serverRunner
	zone   *ratelimit.Zone
	tables []*Table
	guards []*guard.Guard
	stores []*redisstore.Store
	reads  map[string]read
}

var fleets int

// newFleet returns n instances sharing the Redis at addrs (a Cluster when
// there are several), each with its own guard (and denial cache) and, with
// leases on, its own table, on one simulated clock.
func newFleet(t testing.TB, addrs []string, r ratelimit.Rule, n int, leases bool) *fleet {
	t.Helper()
	c, err := resp.New(resp.Options{Addrs: addrs, Cluster: len(addrs) > 1, ReadTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	z, err := ratelimit.NewZone("sim", r, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	fleets++
	prefix := "sim" + strconv.Itoa(fleets) + ":" // fleets sharing a Redis keep apart
	clock := &simClock{now: epoch}
	f := &fleet{client: c, prefix: prefix, clock: clock, runner: &serverRunner{simExpiry: newSimExpiry(c), clock: clock}, zone: z, reads: map[string]read{}}
	for i := 0; i < n; i++ {
		s, err := redisstore.New(f.runner, redisstore.Settings{KeyPrefix: prefix, Cluster: len(addrs) > 1, CallerTime: true})
		if err != nil {
			t.Fatal(err)
		}
		g, err := guard.New(s, guard.Options{})
		if err != nil {
			t.Fatal(err)
		}
		f.stores, f.guards = append(f.stores, s), append(f.guards, g)
		if leases {
			tb, err := NewTable(z, g, Options{Now: f.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			tb.after = f.clock.after
			// A give-back reaches Redis before the next request: the
			// simulated network is instant, and a trace replays.
			tb.async = func(f func()) { f() }
			f.tables = append(f.tables, tb)
		}
	}
	return f
}

// take decides a request of instance i on key at the clock's time; the
// script counts at that time plus the skew.
func (f *fleet) take(i int, key string) ratelimit.Decision {
	now := f.clock.now
	if f.tables != nil {
		return Take(context.Background(), f.tables[i], key, 0, now)
	}
	out := make([]ratelimit.Decision, 1)
	f.guards[i].Take(context.Background(), now, []ratelimit.Item{{Zone: f.zone, Key: key}}, out)
	return out[0]
}

// bucket reads key's bucket value in Redis (see the script's layout: the
// shape in 8 bytes, the newest sub-window in 7, then the total and the m
// cells, w bytes each; a full key, whose shape is stored negated, then has
// its leased units in w bytes and its generation in 4):
// the newest sub-window, and the count Redis holds for sub-window b (-1
// when its cell is no longer kept). Keys due by the server's simulated
// time are expired first, as Redis would on reading them.
func (f *fleet) bucket(key string, b int64) (newest, counted int64, ok bool) {
	k := redisstore.Key(f.prefix, f.zone.Name(), key)
	if err := f.runner.expire(context.Background(), f.clock.now.Add(f.clock.skew).UnixMicro()); err != nil {
		return 0, 0, false
	}
	v, ok := f.get(k)
	if !ok || len(v) < 15 {
		return 0, 0, false
	}
	le := func(p, n int) int64 {
		var x int64
		for j := p + n - 1; j >= p; j-- {
			x = x<<8 | int64(v[j])
		}
		return x
	}
	newest = le(8, 7)
	r := f.zone.Rule()
	m := int64(r.Window/r.SubWindow) + 1
	w := (int64(len(v)) - 19) / (m + 2)
	if v[7] >= 0x80 { // a lean key: the shape as it is (shapeField is negative)
		w = (int64(len(v)) - 15) / (m + 1)
	}
	if b > newest || b <= newest-m {
		return newest, -1, true
	}
	return newest, le(int(15+w*(1+b%m)), int(w)), true
}

// get reads key's value, from Redis once per change of the simulation's
// keys: a step's checks read the same key several times.
func (f *fleet) get(k string) (string, bool) {
	writes := f.runner.Writes()
	if r, ok := f.reads[k]; ok && r.writes == writes {
		return r.v, r.ok
	}
	rep, err := f.client.DoKey(context.Background(), k, "GET", k)
	if err != nil {
		return "", false
	}
	f.reads[k] = read{v: rep.Str, ok: !rep.Nil, writes: writes}
	return rep.Str, !rep.Nil
}

// read is a key's value as get read it, after writes changes.
type read struct {
	v      string
	ok     bool
	writes int64
}

// newest reads the newest sub-window Redis holds for key.
func (f *fleet) newest(key string) (int64, bool) {
	n, _, ok := f.bucket(key, 0)
	return n, ok
}

// close ends every table's leases, giving back what they hold.
func (f *fleet) close() {
	for _, t := range f.tables {
		t.Close()
	}
}

// simBackends are the Redis servers the simulations run against.
var simBackends = []struct {
	name  string
	addrs func(t *testing.T) []string
}{
	{"miniredis", func(t *testing.T) []string { return []string{miniredis.RunT(t).Addr()} }},
	{"redis-server", func(t *testing.T) []string { return []string{redistest.Start(t).Addr()} }},
}

// reset plays the reset step s at server time. An operator's reset
// (forget) is Caddy's admin DELETE through instance s.instance: it forgets
// its lease, and the store resets the key, keeping the units of leases
// still out counted in the fresh count, which then admits no more than the
// limit. Otherwise Redis loses the key: what the instances hold of its
// leases then bounds what it may admit over its fresh budget (see
// exact.reset).
func (f *fleet) reset(t testing.TB, e *exact, s step, server time.Time) {
	t.Helper()
	var held int64
	until := f.clock.now
	for _, tb := range f.tables {
		if h, ok := tb.Inspect(s.key); ok {
			held += h.Units
			if end := f.clock.now.Add(h.ExpiresIn); end.After(until) {
				until = end
			}
		}
	}
	if s.forget {
		var own int64
		if f.tables != nil {
			own = f.tables[s.instance].Forget(s.key)
		}
		if _, err := f.stores[s.instance].Forget(context.Background(), f.zone, s.key, f.clock.now, own); err != nil {
			t.Fatal(err)
		}
		e.reset(s.key, server, 0, f.clock.now)
		return
	}
	if err := f.runner.del(context.Background(), redisstore.Key(f.prefix, f.zone.Name(), s.key)); err != nil {
		t.Fatal(err)
	}
	e.reset(s.key, server, held, until)
}
