package persist

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrClaimed is the error of Claim and Renew when another process holds
// the snapshot: another Caddy or Traefik on the same directory.
var ErrClaimed = errors.New("held by another process")

// A snapshot is claimed through its lock file, path+".lock", which names
// the process that holds it ("host pid") and whose modification time that
// process renews at every save: a lease, which stands for the flock this
// package cannot make (see the package documentation). A lease
// is another process's while it is fresh (renewed within three
// intervals) and names another host, or a live process of this host
// (where /proc tells); a lease of this host and pid is this process's own
// (a container restarted keeps its host name and pid 1). A stale lease,
// or one whose process is gone, is taken over.

// claims counts the claims of this process per snapshot path: a
// reload's new zone claims its file before the old one lets go.
var (
	claimsMu sync.Mutex
	claims   = make(map[string]int)
)

// holder names this process in a lock file.
func holder() string {
	host, _ := os.Hostname()
	return host + " " + strconv.Itoa(os.Getpid()) + "\n"
}

// lease is how long a lock file renewed every interval stays fresh.
func lease(every time.Duration) time.Duration { return 3 * every }

// Claim makes this process the one that reads and writes the snapshot at
// path, saved every interval, until as many Release as Claim. Two
// processes on one directory would otherwise swap counts, the last writer
// winning: while another process holds path, Claim returns an error that
// errors.Is(err, ErrClaimed) recognizes, and the caller must neither
// restore nor save path (it may try again later). The first claim of a
// process removes the temporary files that interrupted saves left.
func Claim(path string, every time.Duration) error {
	claimsMu.Lock()
	defer claimsMu.Unlock()
	if claims[path] > 0 {
		claims[path]++
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating snapshot directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return err
	}
	lock := path + ".lock"
	other, at, err := readLock(lock)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	me := holder()
	if err == nil && other != me && time.Since(at) < lease(every) && alive(other, me) {
		return fmt.Errorf("snapshot %s: %w (%s, per %s)", path, ErrClaimed, strings.TrimSpace(other), lock)
	}
	if err := writeLock(lock, me); err != nil {
		return err
	}
	claims[path] = 1
	removeTemps(path)
	return nil
}

// Renew renews this process's claim of path before a save: ErrClaimed if
// another process took the snapshot over meanwhile.
func Renew(path string) error {
	lock := path + ".lock"
	other, _, err := readLock(lock)
	if err == nil && other != holder() {
		return fmt.Errorf("snapshot %s: %w (%s, per %s)", path, ErrClaimed, strings.TrimSpace(other), lock)
	}
	if errors.Is(err, os.ErrNotExist) {
		return writeLock(lock, holder())
	}
	if err != nil {
		return err
	}
	now := time.Now()
	return os.Chtimes(lock, now, now)
}

// Release ends one Claim of path; the last one removes the lock file,
// so that another process may claim the snapshot at once.
func Release(path string) {
	claimsMu.Lock()
	defer claimsMu.Unlock()
	if claims[path] == 0 {
		return
	}
	claims[path]--
	if claims[path] > 0 {
		return
	}
	delete(claims, path)
	if other, _, err := readLock(path + ".lock"); err == nil && other == holder() {
		os.Remove(path + ".lock")
	}
}

// readLock returns the holder a lock file names and when it was renewed.
// It reads only a regular file of this user, and at most 256 bytes.
func readLock(lock string) (string, time.Time, error) {
	st, err := os.Lstat(lock)
	if err != nil {
		return "", time.Time{}, err
	}
	if !st.Mode().IsRegular() {
		return "", time.Time{}, fmt.Errorf("snapshot lock file %s is not a regular file", lock)
	}
	if err := checkOwner("snapshot lock file", lock, st, ""); err != nil {
		return "", time.Time{}, err
	}
	f, err := os.Open(lock)
	if err != nil {
		return "", time.Time{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return "", time.Time{}, err
	}
	return string(b), st.ModTime(), nil
}

// writeLock makes lock name me, atomically (mode 0600).
func writeLock(lock, me string) error {
	f, err := os.CreateTemp(filepath.Dir(lock), "."+filepath.Base(lock)+".*.tmp")
	if err != nil {
		return fmt.Errorf("creating snapshot lock file %s: %w", lock, bare(err))
	}
	tmp := f.Name()
	_, err = f.WriteString(me)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, lock)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing snapshot lock file %s: %w", lock, bare(err))
	}
	return nil
}

// alive reports whether the holder other, of a fresh lease, still runs:
// always for another host; on this host, where /proc tells, whether its
// pid does. Where /proc does not, another pid of this host is taken for a
// restart of this process.
func alive(other, me string) bool {
	host, pid, _ := strings.Cut(strings.TrimSpace(other), " ")
	myHost, _, _ := strings.Cut(me, " ")
	if host != myHost {
		return true
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		return false
	}
	if _, err := strconv.Atoi(pid); err != nil {
		return false
	}
	_, err := os.Stat("/proc/" + pid)
	return err == nil
}
