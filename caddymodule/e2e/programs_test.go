//go:build !race

package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The helper programs of scripts/e2e (one command a folder), shared
// with traefikplugin/e2e, built once per test process.
var (
	programsMu  sync.Mutex
	programs    = map[string]string{}
	programsDir string
)

// program returns the path of scripts/e2e/<name> built into a binary.
func program(t *testing.T, name string) string {
	t.Helper()
	programsMu.Lock()
	defer programsMu.Unlock()
	if bin, ok := programs[name]; ok {
		return bin
	}
	if programsDir == "" {
		dir, err := os.MkdirTemp("", "windowlimit-e2e-")
		if err != nil {
			t.Fatal(err)
		}
		programsDir = dir
	}
	bin := filepath.Join(programsDir, name)
	cmd := exec.Command("go", "build", "-o", bin, filepath.Join("..", "..", "scripts", "e2e", name))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build scripts/e2e/%s: %v\n%s", name, err, out)
	}
	programs[name] = bin
	return bin
}

// backend is scripts/e2e/backend serving on a free loopback port.
type backend struct {
	t    *testing.T
	Port int
}

// startBackend runs the backend until the test ends.
func startBackend(t *testing.T) *backend {
	t.Helper()
	portFile := filepath.Join(t.TempDir(), "port")
	cmd := exec.Command(program(t, "backend"), "-port-file", portFile)
	if err := cmd.Start(); err != nil {
		t.Fatalf("backend: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	b := &backend{t: t}
	waitFor(t, "the backend to write its port to "+portFile, func() (bool, string) {
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
func (b *backend) Addr() string { return "127.0.0.1:" + strconv.Itoa(b.Port) }

// count returns how many login attempts the backend got from client.
func (b *backend) count(t *testing.T, client string) int {
	t.Helper()
	req, resp := get(t, "http://"+b.Addr()+"/count?client="+client)
	n, err := strconv.Atoi(strings.TrimSpace(resp.Body))
	if err != nil {
		t.Fatalf("%v: %v, want a count", req, resp)
	}
	return n
}

// run runs a program with args, bounded in time, and returns its output
// lines and its standard error.
func run(t *testing.T, bin string, timeout time.Duration, args ...string) (lines []string, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
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

// tally returns lines as "N x LINE, ...", in the order they first appear.
func tally(lines []string) string {
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
