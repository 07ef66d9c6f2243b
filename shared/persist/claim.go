package persist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// ErrClaimed is the error of Claim when another process holds the
// snapshot: another Caddy or Traefik on the same directory.
var ErrClaimed = errors.New("held by another process")

// A claim is this process's hold on one snapshot file: the lock file
// beside it, locked exclusively, and how many zones of the process
// claimed it (a reload's new zone claims it before the old one lets go).
type claim struct {
	lock *os.File
	n    int
}

var (
	claimsMu sync.Mutex
	claims   = make(map[string]*claim)
)

// Claim makes this process the one that reads and writes the snapshot at
// path, until as many Release as Claim: it locks path+".lock" (created
// mode 0600) exclusively, for as long as the process holds it, and on
// the first claim removes the temporary files that interrupted saves
// left. Two processes on one directory would otherwise swap counts, the
// last writer winning: the second gets an error that
// errors.Is(err, ErrClaimed) recognizes, and must neither restore nor
// save path. Claims within a process only count: which of its zones
// writes is the host's choice.
func Claim(path string) error {
	claimsMu.Lock()
	defer claimsMu.Unlock()
	if c := claims[path]; c != nil {
		c.n++
		return nil
	}
	lock := path + ".lock"
	if err := checkDir(filepath.Dir(lock)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(lock), 0o700); err != nil {
		return fmt.Errorf("creating snapshot directory: %w", err)
	}
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE|openFlags, 0o600)
	if err != nil {
		if isLink(err) {
			return fmt.Errorf("snapshot lock file %s is a symbolic link: refused", lock)
		}
		return fmt.Errorf("opening snapshot lock file: %w", err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("snapshot lock file %s is not a regular file", lock)
	}
	if err == nil {
		err = checkOwner("snapshot lock file", lock, st, "")
	}
	if err == nil {
		err = lockFile(f)
		if err != nil && !errors.Is(err, ErrClaimed) {
			err = fmt.Errorf("locking snapshot lock file %s: %w", lock, err)
		}
	}
	if err != nil {
		f.Close()
		return err
	}
	claims[path] = &claim{lock: f, n: 1}
	removeTemps(path)
	return nil
}

// Release ends one Claim of path; the last one unlocks it.
func Release(path string) {
	claimsMu.Lock()
	defer claimsMu.Unlock()
	c := claims[path]
	if c == nil {
		return
	}
	c.n--
	if c.n > 0 {
		return
	}
	delete(claims, path)
	c.lock.Close() // closing the file releases its lock
}
