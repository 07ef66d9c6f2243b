package persist

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// FileName returns the file name, without directory, of the snapshot of
// zone name with rule. It is the name made safe for a file system, then a
// hash of the name and the rule's shape (window, sub-window, algorithm;
// not the limit, which may change across a restart).
func FileName(name string, rule ratelimit.Rule) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, name)
	if len(safe) > 64 {
		safe = safe[:64]
	}
	sum := sha256.Sum256([]byte(strconv.Quote(name) + " " + strconv.FormatInt(int64(rule.Window), 10) + " " +
		strconv.FormatInt(int64(rule.SubWindow), 10) + " " + rule.Algorithm.String()))
	return "zone-" + safe + "-" + hex.EncodeToString(sum[:8]) + ".wlsnap"
}

// Save writes a snapshot of z at now to path and returns how many keys it
// holds. It writes to a temporary file in the same directory (mode 0600),
// syncs it, renames it over path and syncs the directory, so that a crash
// during a write leaves the previous snapshot whole. A missing directory
// is created with mode 0700.
func Save(z *ratelimit.Zone, path string, now time.Time) (int, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("creating snapshot directory: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("creating snapshot file: %w", err)
	}
	tmp := f.Name()
	fail := func(what string, err error) (int, error) {
		f.Close()
		os.Remove(tmp)
		return 0, fmt.Errorf("%s snapshot file %s: %w", what, tmp, err)
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
		return 0, fmt.Errorf("closing snapshot file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("renaming snapshot file into place: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename's durability; some file systems refuse, harmlessly
		d.Close()
	}
	return n, nil
}

// Load restores the snapshot at path into z, a new zone, and returns how
// many keys it restored. z.Restore reads the file whole, and no more than
// a snapshot of z's rule and max keys can take, before it uses any of it.
// A missing file is an error that errors.Is(err, os.ErrNotExist)
// recognizes: nothing to restore.
func Load(z *ratelimit.Zone, path string, now time.Time) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("opening snapshot file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("reading snapshot file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("snapshot file %s is not a regular file", path)
	}
	n, err := z.Restore(f, now)
	if err != nil {
		return 0, fmt.Errorf("snapshot file %s: %w", path, err)
	}
	return n, nil
}
