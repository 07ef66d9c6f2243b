// Package redistest starts throwaway redis-server processes for tests, on
// free loopback ports, with persistence off.
//
// A test that needs Redis calls Start. When redis-server is not installed
// the test is skipped with a message naming the fix, unless the CI
// environment variable is set: CI must run these tests, so there it fails.
package redistest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
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
	// tls, when set, is the client side of a server that listens with TLS
	// only (see StartTLS).
	tls *tls.Config
	// conf, when set, is the configuration file of a Sentinel (see
	// StartSentinel).
	conf string
	// dir is the server's working directory, kept across Restart, so that
	// a test that saved an RDB (SAVE) restarts from it, as a Redis with
	// persistence restarts from its last save.
	dir string
}

// Start runs redis-server on a free loopback port with extra arguments
// (such as "--requirepass", "secret") and stops it when the test ends.
func Start(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	s := &Server{tb: tb, bin: Binary(tb), args: extra}
	s.run()
	return s
}

// run starts s on a free port, trying a few ports in case another process
// takes the chosen one first.
func (s *Server) run() {
	s.tb.Helper()
	var err error
	for try := 0; try < 5; try++ {
		s.port = freePort(s.tb)
		if err = s.start(); err == nil {
			s.tb.Cleanup(s.Kill)
			return
		}
	}
	s.tb.Fatalf("redis-server: %v", err)
}

// Addr returns host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Port returns the port.
func (s *Server) Port() int { return s.port }

func (s *Server) start() error {
	var args []string
	if s.conf != "" {
		args = []string{s.conf, "--sentinel"}
	}
	if s.tls != nil {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(s.port))
	} else {
		args = append(args, "--port", strconv.Itoa(s.port))
	}
	if s.dir == "" {
		s.dir = s.tb.TempDir()
	}
	args = append(args, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--loglevel", "warning")
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
	c, err := s.dial(100 * time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	c.Write([]byte("PING\r\n"))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH"))
}

// dial connects to the server, over TLS when it has TLS.
func (s *Server) dial(timeout time.Duration) (net.Conn, error) {
	if s.tls == nil {
		return net.DialTimeout("tcp", s.Addr(), timeout)
	}
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", s.Addr(), s.tls)
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

// Restart starts the server again on the same port after Kill, in the
// same directory: from the RDB of its last SAVE, if there was one, else
// empty.
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

// BenchAddr returns $WINDOWLIMIT_BENCH_REDIS when set (so a benchmark
// script can point several benchmarks at one server and read its stats),
// or starts a server.
func BenchAddr(tb testing.TB) string {
	if a := os.Getenv("WINDOWLIMIT_BENCH_REDIS"); a != "" {
		return a
	}
	return Start(tb).Addr()
}
