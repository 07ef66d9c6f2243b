//go:build !race

package e2e

import (
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// TestE2ECountStatusAttacks runs e2etest.CountStatusAttacks on Traefik:
// a login behind Traefik whose limit counts 401s, in memory and in Redis,
// on an entry point speaking h1 and h2c (Traefik's default without TLS);
// the backend must get at most 5 attempts of each attack.
func TestE2ECountStatusAttacks(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	rds := redistest.Start(t)
	tr := start(t, traefiktest.Options{}, "fixtures/attack/dynamic.yml",
		map[string]any{"Backend": be.URL(), "Redis": rds.Addr(), "Limit": e2etest.AttackLimit})
	e2etest.CountStatusAttacks(t, be, tr.URL)
}
