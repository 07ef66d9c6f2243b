package ratelimit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/windowlimit/windowlimit/internal/redistest"
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

// newStore returns a RedisStore over a shared/resp client to addr.
func newStore(t testing.TB, addr string) (*RedisStore, *resp.Client) {
	t.Helper()
	c := newClient(t, resp.Options{Addrs: []string{addr}, ReadTimeout: 2 * time.Second})
	s, err := NewRedisStore(c, RedisOptions{KeyPrefix: "t:"})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// newZone returns the zone name of rule r, closed when the test ends. It
// has no sweeper unless opts, given at most once, set a SweepInterval.
func newZone(t testing.TB, name string, r Rule, opts ...Options) *Zone {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = -1
	}
	z, err := NewZone(name, r, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}

func take1(t testing.TB, s Store, now time.Time, z *Zone, key string) Decision {
	t.Helper()
	out := make([]Decision, 1)
	if _, err := s.Take(context.Background(), now, []Item{{Zone: z, Key: key}}, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}
