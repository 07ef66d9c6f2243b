package redisstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/internal/zonetest"
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

// The zone helpers every test of the package uses.
var (
	epoch   = zonetest.Epoch
	newZone = zonetest.NewZone
	take1   = zonetest.Take
)

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
