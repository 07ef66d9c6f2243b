//go:build unix

package caddymodule

import (
	"os"
	"syscall"

	"github.com/windowlimit/windowlimit/shared/persist"
)

// Caddy, compiled, can read who owns a snapshot file, which the shared
// persist package (interpreted in Traefik, without syscall) cannot: a
// file or directory of another user is refused (see persist.FileOwner).
func init() {
	persist.FileOwner = func(st os.FileInfo) (int, bool) {
		s, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return 0, false
		}
		return int(s.Uid), true
	}
}
