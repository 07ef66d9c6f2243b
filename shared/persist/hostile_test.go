//go:build !windows

package persist

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// saved returns a directory holding the snapshot of a zone with one key,
// and the snapshot's path.
func saved(t *testing.T) (string, string) {
	t.Helper()
	rule := ratelimit.Rule{Window: time.Minute, Limit: 5}
	z := persistZone(t, "z", rule)
	at := time.Unix(1_800_000_000, 0)
	ratelimit.TakeAt(z, "client", at)
	dir := filepath.Join(t.TempDir(), "snap")
	path := filepath.Join(dir, FileName("z", "", rule))
	if _, err := Save(z, path, at); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func loadInto(t *testing.T, path string) (int, error) {
	return Load(persistZone(t, "z", ratelimit.Rule{Window: time.Minute, Limit: 5}), path, time.Unix(1_800_000_000, 0))
}

// within runs f and fails the test if it has not returned within a
// minute: a call that blocks for good (on a FIFO) fails rather than
// hangs.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: still blocked after a minute", what)
	}
}

// TestLoadFIFO: a FIFO at the snapshot path is refused at once, never
// opened for a read that waits for a writer.
func TestLoadFIFO(t *testing.T) {
	_, path := saved(t)
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	var err error
	within(t, "Load of a FIFO", func() { _, err = loadInto(t, path) })
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a FIFO at the snapshot path: %v", err)
	}
}

// TestLoadSymlink: a symbolic link at the snapshot path is not followed.
func TestLoadSymlink(t *testing.T) {
	dir, path := saved(t)
	moved := filepath.Join(dir, "elsewhere")
	os.Rename(path, moved)
	os.Symlink(moved, path)
	if _, err := loadInto(t, path); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a link at the snapshot path: %v", err)
	}
}

// TestLoadSparse: a 2 GB file (sparse: no disk) is refused from its size
// before a byte of it is read.
func TestLoadSparse(t *testing.T) {
	_, path := saved(t)
	if err := os.Truncate(path, 2<<30); err != nil {
		t.Skip("no sparse file here:", err)
	}
	start := time.Now()
	_, err := loadInto(t, path)
	if err == nil || !strings.Contains(err.Error(), "is 2147483648 bytes, more than the") {
		t.Fatalf("a 2 GB snapshot file: %v", err)
	}
	t.Logf("refused in %v", time.Since(start))
}

// TestForeignOwner: a snapshot file, or directory, that another user owns
// or that group or others may write is neither read nor written over,
// and the error says how to fix it; created, the directory is 0700 and
// the file 0600.
func TestForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user takes root")
	}
	FileOwner = func(st os.FileInfo) (int, bool) { return int(st.Sys().(*syscall.Stat_t).Uid), true }
	defer func() { FileOwner = nil }()
	dir, path := saved(t)
	rule := ratelimit.Rule{Window: time.Minute, Limit: 5}
	at := time.Unix(1_800_000_000, 0)

	os.Chown(path, 12345, 12345)
	if _, err := loadInto(t, path); err == nil || !strings.Contains(err.Error(), "belongs to uid 12345") {
		t.Fatalf("a file of another user: %v", err)
	}
	os.Chown(path, 0, 0)
	os.Chmod(path, 0o620)
	if _, err := loadInto(t, path); err == nil || !strings.Contains(err.Error(), "may be written by group or others") {
		t.Fatalf("a group-writable file: %v", err)
	}
	os.Chmod(path, 0o600)

	os.Chmod(dir, 0o1777) // a shared sticky directory, as /tmp
	if _, err := loadInto(t, path); err == nil || !strings.Contains(err.Error(), "chmod go-w "+dir) {
		t.Fatalf("a world-writable directory, read: %v", err)
	}
	if _, err := Save(persistZone(t, "z", rule), path, at); err == nil || !strings.Contains(err.Error(), "may be written by group or others") {
		t.Fatalf("a world-writable directory, written: %v", err)
	}
	os.Chmod(dir, 0o700)
	os.Chown(dir, 12345, 12345)
	if _, err := Save(persistZone(t, "z", rule), path, at); err == nil || !strings.Contains(err.Error(), "belongs to uid 12345") {
		t.Fatalf("a directory of another user, written: %v", err)
	}
	os.Chown(dir, 0, 0)
	if n, err := loadInto(t, path); err != nil || n != 1 {
		t.Fatalf("the fixed directory: %d keys, %v", n, err)
	}
}

// TestSaveErrorStable: the same failure reads the same at every save (no
// temporary file's random name in it), so that a host's "same error at
// most once a minute" holds.
func TestSaveErrorStable(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Minute, Limit: 5}
	plain, _ := ratelimit.NewZone("z", rule, ratelimit.Options{SweepInterval: -1})
	defer plain.Close()
	path := filepath.Join(t.TempDir(), FileName("z", "", rule))
	_, first := Save(plain, path, time.Now())
	_, second := Save(plain, path, time.Now())
	if first == nil || second == nil || first.Error() != second.Error() {
		t.Fatalf("two saves failing alike read %q and %q", first, second)
	}
	if strings.Contains(first.Error(), ".tmp") {
		t.Fatalf("the error names a temporary file: %v", first)
	}
}

// TestClaim: one process at a time holds a snapshot: another's fresh
// lease refuses a claim with ErrClaimed, a stale one or one of a process
// gone is taken over, claims within one process count, the first removes
// what interrupted saves left, and Renew sees a takeover.
func TestClaim(t *testing.T) {
	dir, path := saved(t)
	lock := path + ".lock"
	left := filepath.Join(dir, "."+filepath.Base(path)+".123456.tmp")
	other := filepath.Join(dir, ".zone-other.wlsnap.1.tmp")
	os.WriteFile(left, []byte("half"), 0o600)
	os.WriteFile(other, []byte("half"), 0o600)
	host, _ := os.Hostname()

	// Another host's process holds it, renewed just now.
	os.WriteFile(lock, []byte("other-host 1\n"), 0o600)
	if err := Claim(path, time.Second); !errors.Is(err, ErrClaimed) || !strings.Contains(err.Error(), "other-host 1") {
		t.Fatalf("claim of a snapshot another host holds: %v", err)
	}
	if _, err := os.Stat(left); err != nil {
		t.Fatal("a claim that failed removed a temporary file")
	}
	// A live process of this host (this one's parent) holds it.
	os.WriteFile(lock, []byte(host+" "+strconv.Itoa(os.Getppid())+"\n"), 0o600)
	if _, err := os.Stat("/proc/self"); err == nil {
		if err := Claim(path, time.Second); !errors.Is(err, ErrClaimed) {
			t.Fatalf("claim of a snapshot a live process of this host holds: %v", err)
		}
	}
	// That process stopped three intervals ago.
	old := time.Now().Add(-3 * time.Second)
	os.Chtimes(lock, old, old)
	if err := Claim(path, time.Second); err != nil {
		t.Fatalf("claim of a stale lease: %v", err)
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the interrupted save's temporary file is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatal("another zone's temporary file was removed")
	}
	if err := Claim(path, time.Second); err != nil { // a reload's new zone
		t.Fatal(err)
	}
	if err := Renew(path); err != nil {
		t.Fatal(err)
	}
	Release(path)
	if _, err := os.Stat(lock); err != nil {
		t.Fatal("one release of two claims let the snapshot go")
	}
	Release(path)
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the last release left the lock file: %v", err)
	}

	// A process of this host that is gone: taken over at once.
	os.WriteFile(lock, []byte(host+" 999999999\n"), 0o600)
	if err := Claim(path, time.Minute); err != nil {
		t.Fatalf("claim of a lease whose process is gone: %v", err)
	}
	// Another host took it over meanwhile: the next save must not be.
	os.WriteFile(lock, []byte("other-host 1\n"), 0o600)
	if err := Renew(path); !errors.Is(err, ErrClaimed) {
		t.Fatalf("renew after a takeover: %v", err)
	}
	Release(path)
}
