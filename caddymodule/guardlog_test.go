package caddymodule

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/windowlimit/windowlimit/shared/guard"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The guard's failure and recovery lines read as docs/caddy.md says: a
// failure at WARN naming on_store_error and its policy, with
// errors_not_logged; a recovery at INFO with unavailable.
func TestGuardLogLines(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	s := &redisSetup{opts: redis.UniversalOptions{Addrs: []string{"r:6379"}}}
	log := guardLog(zap.New(core), s)
	log(guard.Event{Err: errors.New("connection refused"), Suppressed: 3, Policy: guard.FailDeny, Store: "redis"})
	log(guard.Event{Down: 5 * time.Second, Policy: guard.FailDeny, Store: "redis"})
	all := logs.All()
	if len(all) != 2 {
		t.Fatalf("%d lines, want 2", len(all))
	}
	failed, back := all[0], all[1]
	if failed.Level != zapcore.WarnLevel || failed.Message != "redis store failed; requests decided by on_store_error deny" ||
		failed.ContextMap()["errors_not_logged"] != int64(3) || failed.ContextMap()["redis"] != "r:6379" || failed.ContextMap()["error"] != "connection refused" {
		t.Errorf("failure line: %v %q %v", failed.Level, failed.Message, failed.ContextMap())
	}
	if back.Level != zapcore.InfoLevel || back.Message != "redis store answers again after 5s" || back.ContextMap()["unavailable"] != 5*time.Second {
		t.Errorf("recovery line: %v %q %v", back.Level, back.Message, back.ContextMap())
	}
}
