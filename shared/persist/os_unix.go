//go:build !windows

package persist

import (
	"errors"
	"os"
	"syscall"
)

// openFlags open a snapshot file without following a symbolic link and
// without blocking on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// isLink reports whether err is an open's refusal of a symbolic link
// under O_NOFOLLOW.
func isLink(err error) bool { return errors.Is(err, syscall.ELOOP) }

// ownerOf returns the uid that owns the file of st.
func ownerOf(st os.FileInfo) (uint32, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return s.Uid, true
}

// euid returns the process's effective uid.
func euid() uint32 { return uint32(syscall.Geteuid()) }

// lockFile locks f exclusively without waiting: ErrClaimed if another
// open file holds it.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == syscall.EWOULDBLOCK {
		return ErrClaimed
	}
	return err
}
