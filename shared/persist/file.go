package persist

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// FileName returns the file name, without directory, of the snapshot of
// zone name of scope (the host's key template) with rule. It is the name
// made safe for a file system, then a hash of the name, the scope and the
// rule's shape (window, sub-window, algorithm; not the limit, which may
// change across a restart).
func FileName(name, scope string, rule ratelimit.Rule) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, name)
	if len(safe) > 64 {
		safe = safe[:64]
	}
	sum := sha256.Sum256([]byte(strconv.Quote(name) + " " + strconv.Quote(scope) + " " + strconv.FormatInt(int64(rule.Window), 10) + " " +
		strconv.FormatInt(int64(rule.SubWindow), 10) + " " + rule.Algorithm.String()))
	return "zone-" + safe + "-" + hex.EncodeToString(sum[:8]) + ".wlsnap"
}

// Save writes a snapshot of z at now to path and returns how many keys it
// holds. It writes to a temporary file in the same directory (mode 0600),
// syncs it, renames it over path and syncs the directory, so that a crash
// during a write leaves the previous snapshot whole. A missing directory
// is created with mode 0700; one that another user owns, or that group
// or others may write, is refused (see checkDir). Its errors name path,
// never the temporary file, so that the same failure reads the same.
func Save(z *ratelimit.Zone, path string, now time.Time) (int, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("creating snapshot directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("creating a temporary file for %s: %w", path, bare(err))
	}
	tmp := f.Name()
	fail := func(what string, err error) (int, error) {
		f.Close()
		os.Remove(tmp)
		return 0, fmt.Errorf("%s snapshot file %s: %w", what, path, bare(err))
	}
	if err := f.Chmod(0o600); err != nil {
		return fail("setting the mode of", err)
	}
	n, err := z.Snapshot(f, now)
	if err != nil {
		return fail("writing", err)
	}
	if err := f.Sync(); err != nil {
		return fail("syncing", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("closing snapshot file %s: %w", path, bare(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("renaming snapshot file %s into place: %w", path, bare(err))
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename's durability; some file systems refuse, harmlessly
		d.Close()
	}
	return n, nil
}

// bare returns err without the path of an *fs.PathError or
// *os.LinkError, which would name a temporary file.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// Load restores the snapshot at path into z, a new zone, and returns how
// many keys it restored. It looks at path before it opens it: what is not
// a regular file (a link, a FIFO, a device) is refused unopened, as is a
// file or directory that another user owns or that group or others may
// write, and a file larger than z can take (z.MaxSnapshotSize); the file
// opened must be the one looked at. A missing file is an error that
// errors.Is(err, os.ErrNotExist) recognizes: nothing to restore.
func Load(z *ratelimit.Zone, path string, now time.Time) (int, error) {
	if err := checkDir(filepath.Dir(path)); err != nil {
		return 0, err
	}
	st, err := os.Lstat(path)
	if err != nil {
		return 0, fmt.Errorf("reading snapshot file: %w", err)
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return 0, fmt.Errorf("snapshot file %s is a symbolic link: refused (the snapshot itself belongs there)", path)
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("snapshot file %s is not a regular file (%v): refused unopened", path, st.Mode().Type())
	}
	if err := checkOwner("snapshot file", path, st, ""); err != nil {
		return 0, err
	}
	if max := z.MaxSnapshotSize(); st.Size() > max {
		return 0, fmt.Errorf("snapshot file %s is %d bytes, more than the %d a snapshot of this zone can take", path, st.Size(), max)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("opening snapshot file: %w", err)
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(st, opened) {
		return 0, fmt.Errorf("snapshot file %s changed while it was opened", path)
	}
	n, err := z.Restore(f, now)
	if err != nil {
		return 0, fmt.Errorf("snapshot file %s: %w", path, err)
	}
	return n, nil
}

// checkDir refuses a snapshot directory that another user (but root)
// owns, or that group or others may write: whoever can write it can plant
// a snapshot, or a link, that the zone would read as its own counts. A
// missing directory is an error that errors.Is(err, os.ErrNotExist)
// recognizes.
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("snapshot directory: %w", err)
	}
	return checkOwner("snapshot directory", dir, st, "chmod go-w "+dir+", or persist to a directory only this user can write")
}

// FileOwner, when set, returns the uid that owns the file of st: a host
// that can read it sets it (Caddy, on unix). Where it is nil (Traefik,
// see the package documentation) only the mode is checked.
var FileOwner func(st os.FileInfo) (uid int, ok bool)

// checkOwner refuses what, at path, of st, if another user (but root)
// owns it or group or others may write it, saying how to fix it (fix; a
// file's fix is its own).
func checkOwner(what, path string, st os.FileInfo, fix string) error {
	if fix == "" {
		fix = "remove it; the next snapshot writes it afresh"
	}
	if FileOwner != nil {
		if uid, ok := FileOwner(st); ok && uid != 0 && uid != os.Geteuid() {
			return fmt.Errorf("%s %s belongs to uid %d, not to this process's uid %d: refused, it is neither read nor written (%s)",
				what, path, uid, os.Geteuid(), fix)
		}
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s %s may be written by group or others (mode %v): refused, it is neither read nor written (%s)",
			what, path, st.Mode(), fix)
	}
	return nil
}

// removeTemps removes the temporary files that interrupted saves of the
// snapshot at path (and of its lock) left, and reports how many it
// removed. Only the owner
// of path (see Claim) calls it, before any save of its own. path's base
// is a FileName, which holds no pattern character.
func removeTemps(path string) int {
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp"))
	n := 0
	for _, f := range left {
		if os.Remove(f) == nil {
			n++
		}
	}
	return n
}
