package redisstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// backend is a Redis a test runs against: miniredis (fast, in process) or
// a real redis-server (the Lua that production runs).
type backend struct {
	name  string
	start func(t *testing.T) string // returns host:port
}

var backends = []backend{
	{"miniredis", func(t *testing.T) string { return miniredis.RunT(t).Addr() }},
	{"redis-server", func(t *testing.T) string { return redistest.Start(t).Addr() }},
}

// countingRunner counts the calls that go through a ScriptRunner.
type countingRunner struct {
	ScriptRunner
	evalSha, eval int64
}

func (c *countingRunner) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	atomic.AddInt64(&c.evalSha, 1)
	return c.ScriptRunner.EvalSha(ctx, sha, keys, args)
}

func (c *countingRunner) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	atomic.AddInt64(&c.eval, 1)
	return c.ScriptRunner.Eval(ctx, script, keys, args)
}

func newClient(t testing.TB, opts resp.Options) *resp.Client {
	t.Helper()
	c, err := resp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newStore returns a Store over a shared/resp client to addr.
func newStore(t testing.TB, addr string) (*Store, *resp.Client) {
	t.Helper()
	c := newClient(t, resp.Options{Addrs: []string{addr}, ReadTimeout: 2 * time.Second})
	s, err := New(c, Settings{KeyPrefix: "t:"})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// newZone returns the zone name of rule r, closed when the test ends. It
// has no sweeper unless opts, given at most once, set a SweepInterval.
func newZone(t testing.TB, name string, r ratelimit.Rule, opts ...ratelimit.Options) *ratelimit.Zone {
	t.Helper()
	var o ratelimit.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = -1
	}
	z, err := ratelimit.NewZone(name, r, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}

func take1(t testing.TB, s ratelimit.Store, now time.Time, z *ratelimit.Zone, key string) ratelimit.Decision {
	t.Helper()
	out := make([]ratelimit.Decision, 1)
	if _, err := s.Take(context.Background(), now, []ratelimit.Item{{Zone: z, Key: key}}, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// newGuard returns a guard in front of remote, closed when the test ends.
func newGuard(t *testing.T, remote ratelimit.Store, opts guard.Options) *guard.Guard {
	t.Helper()
	g, err := guard.New(remote, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}
