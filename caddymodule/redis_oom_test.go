package caddymodule

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestRedisOutOfMemoryLogged: through go-redis, a Redis over maxmemory
// denies what it counted, answers a fresh key with on_store_error without
// opening the breaker, and the log says what to do.
func TestRedisOutOfMemoryLogged(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
	setup, err := (&RedisConfig{Address: srv.Addr()}).resolve(guard.FailDeny)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.WarnLevel)
	key, g, err := acquireRedis(setup, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	defer releaseRedis(key)
	z := testZone(t, "oom", ratelimit.Rule{Window: time.Hour, Limit: 1})
	take := func(k string) ratelimit.Decision {
		out := make([]ratelimit.Decision, 1)
		g.Take(context.Background(), time.Now(), []ratelimit.Item{{Zone: z, Key: k}}, out)
		return out[0]
	}
	if d := take("counted"); !d.Allowed {
		t.Fatalf("before the fill: %+v", d)
	}
	srv.Do(t, "EVAL", `for i = 1, 40000 do redis.call('SET', 'junk:' .. i, string.rep('x', 64)) end`, "0")
	if d := take("counted"); d.Allowed || d.RetryAfter < time.Minute {
		t.Fatalf("the counted key while redis is out of memory: %+v, want redis's denial", d)
	}
	for i := 0; i < 3; i++ {
		if d := take("fresh"); d.Allowed || d.RetryAfter != guard.DenyRetryAfter {
			t.Fatalf("a fresh key while redis is out of memory: %+v, want on_store_error deny", d)
		}
	}
	st := g.Stats()
	if st.Open || st.Failures != 0 || st.OutOfMemory != 3 {
		t.Fatalf("stats %+v: want the breaker closed, no failures, 3 out of memory", st)
	}
	lines := logs.FilterMessageSnippet("redis is out of memory (maxmemory reached)").All()
	if len(lines) != 1 || lines[0].ContextMap()["on_store_error"] != "deny" {
		t.Fatalf("log lines %+v, want one naming on_store_error deny", logs.All())
	}
}
