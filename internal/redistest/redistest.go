// Package redistest starts throwaway redis-server processes for tests, on
// free loopback ports, with persistence off.
//
// A test that needs Redis calls Start. When redis-server is not installed
// the test is skipped with a message naming the fix, unless the CI
// environment variable is set: CI must run these tests, so there it fails.
package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Binary is the redis-server the tests run: $REDIS_SERVER, or the one on
// PATH.
func Binary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		return p
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("redis-server is not installed; scripts/test.sh installs it (apt-get install redis-server)")
		}
		tb.Skip("redis-server is not installed (apt-get install redis-server, or run scripts/test.sh)")
	}
	return p
}

// Server is one redis-server process.
type Server struct {
	tb   testing.TB
	bin  string
	args []string
	port int
	cmd  *exec.Cmd
}

// Start runs redis-server on a free loopback port with extra arguments
// (such as "--requirepass", "secret") and stops it when the test ends.
func Start(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	s := &Server{tb: tb, bin: Binary(tb), args: extra}
	var err error
	for try := 0; try < 5; try++ {
		s.port = freePort(tb)
		if err = s.start(); err == nil {
			tb.Cleanup(s.Kill)
			return s
		}
	}
	tb.Fatalf("redis-server: %v", err)
	return nil
}

// Addr returns host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Port returns the port.
func (s *Server) Port() int { return s.port }

func (s *Server) start() error {
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.tb.TempDir(), "--loglevel", "warning"}
	if major(s.tb, s.bin) >= 7 {
		args = append(args, "--enable-debug-command", "yes")
	}
	args = append(args, s.args...)
	cmd := exec.Command(s.bin, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if s.pingOK() {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Kill()
	return fmt.Errorf("no answer on port %d", s.port)
}

// pingOK reports whether the server answers PING (or asks for AUTH).
func (s *Server) pingOK() bool {
	c, err := net.DialTimeout("tcp", s.Addr(), 100*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	c.Write([]byte("PING\r\n"))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH"))
}

// Kill stops the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same port after Kill.
func (s *Server) Restart() {
	s.tb.Helper()
	var err error
	for try := 0; try < 50; try++ { // the port may linger briefly
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.tb.Fatalf("redis-server restart: %v", err)
}

func freePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var versionRE = regexp.MustCompile(`v=(\d+)\.`)

func major(tb testing.TB, bin string) int {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		tb.Fatalf("%s --version: %v", bin, err)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// Cluster starts a three-master Redis Cluster with scripts/redis-cluster.sh
// and returns its addresses; it is stopped when the test ends.
func Cluster(tb testing.TB) []string {
	tb.Helper()
	Binary(tb)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		tb.Skip("redis-cli is not installed")
	}
	script := filepath.Join(repoRoot(tb), "scripts", "redis-cluster.sh")
	dir := tb.TempDir()
	out, err := exec.Command("bash", script, "start", dir).CombinedOutput()
	if err != nil {
		exec.Command("bash", script, "stop", dir).Run()
		tb.Fatalf("%s start: %v\n%s", script, err, out)
	}
	tb.Cleanup(func() { exec.Command("bash", script, "stop", dir).Run() })
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ADDRS ") {
			return strings.Fields(line)[1:]
		}
	}
	tb.Fatalf("%s printed no ADDRS line:\n%s", script, out)
	return nil
}

func repoRoot(tb testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// BenchAddr returns $WINDOWLIMIT_BENCH_REDIS when set (so a benchmark
// script can point several benchmarks at one server and read its stats),
// or starts a server.
func BenchAddr(tb testing.TB) string {
	if a := os.Getenv("WINDOWLIMIT_BENCH_REDIS"); a != "" {
		return a
	}
	return Start(tb).Addr()
}

// Calls returns how many times the server at addr ran each command, from
// INFO commandstats ("evalsha", "eval", ...).
func Calls(tb testing.TB, addr string) map[string]int64 {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte("INFO commandstats\r\n"))
	r := bufio.NewReader(c)
	header, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(header, "$") {
		tb.Fatalf("INFO commandstats: %q, %v", header, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(header[1:]))
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		tb.Fatal(err)
	}
	calls := make(map[string]int64)
	for _, line := range strings.Split(string(body), "\r\n") {
		// cmdstat_evalsha:calls=12,usec=...
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ",")
		v, _ := strconv.ParseInt(num, 10, 64)
		calls[name] = v
	}
	return calls
}
