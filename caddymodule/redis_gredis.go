package caddymodule

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// goRedisRunner runs the limiter script over go-redis, which brings Redis
// Cluster, Sentinel and its pool to the Caddy module. It implements
// ratelimit.ScriptRunner; the store handles NOSCRIPT.
type goRedisRunner struct {
	client redis.UniversalClient
}

// newGoRedisRunner returns a runner over client, which the caller owns.
func newGoRedisRunner(client redis.UniversalClient) goRedisRunner {
	return goRedisRunner{client: client}
}

// EvalSha implements ratelimit.ScriptRunner.
func (r goRedisRunner) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	return int64s(r.client.EvalSha(ctx, sha, keys, anys(args)...).Result())
}

// Eval implements ratelimit.ScriptRunner.
func (r goRedisRunner) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	return int64s(r.client.Eval(ctx, script, keys, anys(args)...).Result())
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
