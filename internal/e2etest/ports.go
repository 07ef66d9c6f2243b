package e2etest

import (
	"net"
	"sync"
	"testing"
)

// usedPorts holds every port FreePort handed out in this process.
var (
	usedPortsMu sync.Mutex
	usedPorts   = map[int]bool{}
)

// FreePort returns a TCP port that was free on the loopback a moment ago
// and that this process has not handed out before, so that parallel tests
// never share one: Caddy listens with SO_REUSEPORT, so two instances
// given one port would share it without an error.
func FreePort(tb testing.TB) int {
	tb.Helper()
	usedPortsMu.Lock()
	defer usedPortsMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !usedPorts[port] {
			usedPorts[port] = true
			return port
		}
	}
	tb.Fatal("no free port that this process has not used")
	return 0
}
