package e2etest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var programMu sync.Mutex

// Program returns the binary of scripts/e2e/<name>, built once inside
// this module and cached in CacheDir as wl-<name>-<hash of the source>,
// the name scripts/lib/common.sh's wl_go_bin gives it: the scripts and the tests
// share the build, and no checkout runs another's version.
func Program(tb testing.TB, name string) string {
	tb.Helper()
	programMu.Lock()
	defer programMu.Unlock()
	root := Root()
	src := filepath.Join(root, "scripts", "e2e", name, "main.go")
	text, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(text)
	bin := filepath.Join(CacheDir(), "wl-"+name+"-"+hex.EncodeToString(sum[:])[:12])
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		tb.Fatal(err)
	}
	tmp := bin + ".tmp." + strconv.Itoa(os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "./scripts/e2e/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build scripts/e2e/%s: %v\n%s", name, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Backend is scripts/e2e/backend serving on a free loopback port: 200
// "ok", or the status X-Status names (after ?wait=), a login on paths
// ending in /login, server-sent events on paths ending in /events, and
// the count of login attempts that reached it from each client.
type Backend struct {
	Port int
}

// StartBackend runs the backend until the test ends.
func StartBackend(tb testing.TB) *Backend {
	tb.Helper()
	portFile := filepath.Join(tb.TempDir(), "port")
	cmd := exec.Command(Program(tb, "backend"), "-port-file", portFile)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("backend: %v", err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	b := &Backend{}
	WaitFor(tb, 10*time.Second, "the backend to write its port to "+portFile, func() (bool, string) {
		text, err := os.ReadFile(portFile)
		if err != nil {
			return false, err.Error()
		}
		b.Port, err = strconv.Atoi(strings.TrimSpace(string(text)))
		return err == nil, "port file " + strconv.Quote(string(text))
	})
	return b
}

// Addr returns the backend's host:port.
func (b *Backend) Addr() string { return "127.0.0.1:" + strconv.Itoa(b.Port) }

// URL returns the backend's base URL, as a service's server url.
func (b *Backend) URL() string { return "http://" + b.Addr() }

// Count returns how many login attempts reached the backend from client
// (by the address the proxy put last in X-Forwarded-For).
func (b *Backend) Count(tb testing.TB, client string) int {
	tb.Helper()
	req, resp := Get(tb, b.URL()+"/count?client="+client)
	n, err := strconv.Atoi(strings.TrimSpace(resp.Body))
	if err != nil {
		tb.Fatalf("%v: %v, want a count", req, resp)
	}
	return n
}

// Run runs a program with args, killed after timeout, and returns its
// output's lines and its standard error.
func Run(tb testing.TB, bin string, timeout time.Duration, args ...string) (lines []string, stderr string) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	timer := time.AfterFunc(timeout, func() { cmd.Process.Kill() })
	defer timer.Stop()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	cmd.Wait()
	return lines, errb.String()
}

// Tally returns lines as "N x LINE, ...", in the order they first appear.
func Tally(lines []string) string {
	var order []string
	n := map[string]int{}
	for _, l := range lines {
		if n[l] == 0 {
			order = append(order, l)
		}
		n[l]++
	}
	var parts []string
	for _, l := range order {
		parts = append(parts, strconv.Itoa(n[l])+" x "+l)
	}
	return strings.Join(parts, ", ")
}
