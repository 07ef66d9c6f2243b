package persist

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

func persistZone(t *testing.T, name string, rule ratelimit.Rule) *ratelimit.Zone {
	t.Helper()
	z, err := ratelimit.NewZone(name, rule, ratelimit.Options{SweepInterval: -1, Persist: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	return z
}

// TestSaveLoad: a zone saved and loaded into the zone of the next process
// keeps its counts: a client at its limit stays limited.
func TestSaveLoad(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Minute, Limit: 5}
	z := persistZone(t, "login", rule)
	at := time.Unix(1_800_000_000, 0)
	for i := 0; i < 5; i++ {
		ratelimit.TakeAt(z, "client", at)
	}
	path := filepath.Join(t.TempDir(), FileName("login", "", rule))
	if n, err := Save(z, path, at); err != nil || n != 1 {
		t.Fatalf("Save: %d keys, %v", n, err)
	}
	next := persistZone(t, "login", rule)
	if n, err := Load(next, path, at.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("Load: %d keys, %v", n, err)
	}
	if d := ratelimit.TakeAt(next, "client", at.Add(time.Second)); d.Allowed {
		t.Fatalf("after a restart the client at its limit was admitted: %+v", d)
	}
}

// TestFileErrors: the file and its directory are private, a missing file
// says so, a directory that cannot be made is an error, a failed write
// leaves the previous snapshot whole and no temporary file, and what is
// not a regular file is not read.
func TestFileErrors(t *testing.T) {
	rule := ratelimit.Rule{Window: time.Minute, Limit: 5}
	z := persistZone(t, "z", rule)
	at := time.Unix(1_800_000_000, 0)
	for i := 0; i < 50; i++ {
		ratelimit.TakeAt(z, "k"+strconv.Itoa(i), at)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", FileName("z", "", rule))
	if _, err := Save(z, path, at); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Fatalf("%s: mode %v, want %v (%v)", p, st.Mode().Perm(), want, err)
		}
	}
	if _, err := Load(persistZone(t, "z", rule), filepath.Join(dir, "none"), at); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	// A directory that cannot be: a regular file in the way.
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o600)
	if _, err := Save(z, filepath.Join(blocker, "x.wlsnap"), at); err == nil {
		t.Fatal("wrote under a regular file")
	}
	// A zone that keeps no snapshots fails to write, and the previous
	// snapshot stays whole, with no temporary file beside it.
	plain, _ := ratelimit.NewZone("z", rule, ratelimit.Options{SweepInterval: -1})
	defer plain.Close()
	if _, err := Save(plain, path, at); err == nil {
		t.Fatal("saved a zone without Options.Persist")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want the snapshot alone", len(entries))
	}
	if n, err := Load(persistZone(t, "z", rule), path, at); err != nil || n != 50 {
		t.Fatalf("the previous snapshot: %d keys, %v", n, err)
	}
	if _, err := Load(persistZone(t, "z", rule), dir, at); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory read as a snapshot: %v", err)
	}
}

// TestFileName: a name the file system takes, told apart by the zone's
// name and shape but not its limit.
func TestFileName(t *testing.T) {
	r := ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 5}
	a := FileName("../etc/pass wd", "", r)
	if strings.ContainsAny(a, "/ ") || !strings.HasSuffix(a, ".wlsnap") {
		t.Fatalf("unsafe name %q", a)
	}
	other := r
	other.Limit = 50
	if FileName("z", "", r) != FileName("z", "", other) {
		t.Error("the limit changed the file name")
	}
	other.Window = 2 * time.Minute
	if FileName("z", "", r) == FileName("z", "", other) || FileName("z", "", r) == FileName("y", "", r) {
		t.Error("another shape or name shares the file name")
	}
	if FileName("z", "{remote_host}", r) == FileName("z", "{client_ip}", r) {
		t.Error("another scope (key template) shares the file name")
	}
}
