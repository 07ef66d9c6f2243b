package e2etest

import (
	"os"
	"path/filepath"
	"runtime"
)

// CacheDir returns where the scripts cache their builds:
// $WINDOWLIMIT_CACHE, or ~/.cache/windowlimit.
func CacheDir() string {
	if d := os.Getenv("WINDOWLIMIT_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "windowlimit")
}

// Root returns the checkout's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
