package traefiktest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/windowlimit/windowlimit/internal/e2etest"
)

// Version is the Traefik the tests run: the one scripts/lib/traefik.sh
// builds.
const Version = "v3.6.12"

// Module is the plugin's module, as experimental.localPlugins names it.
const Module = "github.com/windowlimit/windowlimit"

// SkipEnv, set to 1, skips a test that needs Traefik when the binary is
// missing, instead of failing it.
const SkipEnv = "WL_TRAEFIK_SKIP"

// Binary returns the path of the Traefik binary: $WL_TRAEFIK, or
// traefik-v3.6.12 in e2etest.CacheDir. When there is none it fails tb with the
// command that builds it, or skips tb when WL_TRAEFIK_SKIP=1.
func Binary(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("WL_TRAEFIK")
	if bin == "" {
		bin = filepath.Join(e2etest.CacheDir(), "traefik-"+Version)
	}
	if fi, err := os.Stat(bin); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return bin
	}
	msg := "no Traefik " + Version + " at " + bin + ": build it once (6 to 15 minutes) with " +
		"`bash -c 'source scripts/lib/traefik.sh; wt_traefik'`, or set WL_TRAEFIK to a Traefik v3 binary"
	if os.Getenv(SkipEnv) == "1" {
		tb.Skip(msg + " (skipped: " + SkipEnv + "=1)")
	}
	tb.Fatal(msg + " (or set " + SkipEnv + "=1 to skip)")
	return ""
}
