package caddymodule

import (
	"github.com/windowlimit/windowlimit/shared/guard"
	"go.uber.org/zap"
)

// acquireRedis returns the guard for s, creating the client if no loaded
// config has it, and its pool key for releaseRedis.
func acquireRedis(s *redisSetup, logger *zap.Logger) (string, *guard.Guard, error) {
	key, p, err := acquirePooledRedis(s, logger)
	if err != nil {
		return "", nil, err
	}
	return key, p.guard, nil
}
