//go:build !race

package e2e

import (
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// TestE2EOverrides: per-key limits in memory (checkOverrides);
// TestE2ERedisShared checks them across two instances through Redis.
func TestE2EOverrides(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	tr := start(t, traefiktest.Options{}, "fixtures/overrides/dynamic.yml", map[string]any{"Backend": be.URL()})
	checkOverrides(t, tr, tr, "/tiers", "/internal")
}
