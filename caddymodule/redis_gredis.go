package caddymodule

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// goRedisRunner runs the limiter script over go-redis, which brings Redis
// Cluster, Sentinel and its pool to the Caddy module. It implements
// ratelimit.ScriptRunner; the store handles NOSCRIPT.
//
// Its client can be replaced while it runs. After pool_size failed dials a
// go-redis pool stops dialling and retries the server only once a second,
// so a client that lived through an outage may go on failing for up to a
// second after Redis is back. probe therefore asks Redis through a fresh
// client, and the first one that gets an answer takes over.
type goRedisRunner struct {
	cur atomic.Pointer[clientRef]

	mu     sync.Mutex // guards closed and retired
	closed bool
	// retired holds the replaced clients not closed yet, each with the
	// timer that will close it.
	retired map[redis.UniversalClient]*time.Timer
}

type clientRef struct{ c redis.UniversalClient }

// retiredClientGrace is how long a replaced client stays open for the
// requests that were already using it.
const retiredClientGrace = 5 * time.Second

// newGoRedisRunner returns a runner over client; closing the runner
// closes it.
func newGoRedisRunner(client redis.UniversalClient) *goRedisRunner {
	r := new(goRedisRunner)
	r.cur.Store(&clientRef{client})
	return r
}

func (r *goRedisRunner) client() redis.UniversalClient { return r.cur.Load().c }

// EvalSha implements ratelimit.ScriptRunner.
func (r *goRedisRunner) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	return int64s(r.client().EvalSha(ctx, sha, keys, anys(args)...).Result())
}

// Eval implements ratelimit.ScriptRunner.
func (r *goRedisRunner) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	return int64s(r.client().Eval(ctx, script, keys, anys(args)...).Result())
}

// probe checks, for the breaker, that Redis answers the script through a
// client made by newClient; if it does, that client replaces the
// runner's.
func (r *goRedisRunner) probe(ctx context.Context, newClient func() redis.UniversalClient, opts ratelimit.RedisOptions) error {
	fresh := newClient()
	store, err := ratelimit.NewRedisStore(newGoRedisRunner(fresh), opts)
	if err == nil {
		err = store.Ping(ctx)
	}
	if err != nil {
		fresh.Close()
		return err
	}
	r.replace(fresh)
	return nil
}

// replace makes c the runner's client and closes the old one after
// retiredClientGrace.
func (r *goRedisRunner) replace(c redis.UniversalClient) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return
	}
	old := r.cur.Swap(&clientRef{c}).c
	if r.retired == nil {
		r.retired = make(map[redis.UniversalClient]*time.Timer)
	}
	r.retired[old] = time.AfterFunc(retiredClientGrace, func() {
		r.mu.Lock()
		_, ours := r.retired[old] // Close may have taken it
		delete(r.retired, old)
		r.mu.Unlock()
		if ours {
			old.Close()
		}
	})
}

// Close closes the client and the replaced ones still open.
func (r *goRedisRunner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	for c, t := range r.retired {
		t.Stop()
		c.Close()
	}
	r.retired = nil
	return r.client().Close()
}

func anys(args []string) []interface{} {
	out := make([]interface{}, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// int64s converts the script's reply, an array of integers.
func int64s(v interface{}, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]interface{})
	if !ok {
		return nil, fmt.Errorf("redis script reply is %T, want an array", v)
	}
	out := make([]int64, len(arr))
	for i, e := range arr {
		n, ok := e.(int64)
		if !ok {
			return nil, fmt.Errorf("redis script reply element %d is %T, want an integer", i, e)
		}
		out[i] = n
	}
	return out, nil
}
