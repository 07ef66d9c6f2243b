package redistest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartSentinel runs a Redis Sentinel on a free loopback port, watching
// the master at masterAddr under the name master, and stops it when the
// test ends. Its quorum is 1, so it alone may fail the master over.
// Lines are added to its configuration file (such as "requirepass x").
func StartSentinel(tb testing.TB, master, masterAddr string, lines ...string) *Server {
	tb.Helper()
	host, port, err := net.SplitHostPort(masterAddr)
	if err != nil {
		tb.Fatal(err)
	}
	// Sentinel rewrites its configuration file: it must be writable.
	conf := filepath.Join(tb.TempDir(), "sentinel.conf")
	text := fmt.Sprintf("sentinel monitor %[1]s %s %s 1\nsentinel down-after-milliseconds %[1]s 1000\n", master, host, port)
	for _, l := range lines {
		text += l + "\n"
	}
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	s := &Server{tb: tb, bin: Binary(tb), conf: conf}
	s.run()
	return s
}

// MasterAddr asks the sentinel s for the host:port of master.
func (s *Server) MasterAddr(tb testing.TB, master string) string {
	tb.Helper()
	r := s.Do(tb, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", master)
	if len(r) != 2 {
		tb.Fatalf("sentinel %s: no master %q: %q", s.Addr(), master, r)
	}
	return net.JoinHostPort(r[0], r[1])
}

// Failover makes the sentinel s promote a replica of master and returns
// the new master's address once s names it, within 10 seconds.
func (s *Server) Failover(tb testing.TB, master string) string {
	tb.Helper()
	old := s.MasterAddr(tb, master)
	deadline := time.Now().Add(10 * time.Second)
	// The sentinel learns of a replica from the master's INFO, then of its
	// link from the replica's: until then it has none to promote.
	for {
		_, err := s.do("SENTINEL", "FAILOVER", master)
		if err == nil {
			break
		}
		if !strings.HasPrefix(err.Error(), "NOGOODSLAVE") || time.Now().After(deadline) {
			tb.Fatalf("sentinel %s: failover %s: %v", s.Addr(), master, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		if addr := s.MasterAddr(tb, master); addr != old {
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("sentinel %s: %s still at %s 10s after the failover", s.Addr(), master, old)
	return ""
}

// WaitReplicas waits until the master s has n replicas attached.
func (s *Server) WaitReplicas(tb testing.TB, n int) {
	tb.Helper()
	want := "connected_slaves:" + strconv.Itoa(n) + "\r\n"
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(s.Do(tb, "INFO", "replication")[0], want) {
		if time.Now().After(deadline) {
			tb.Fatalf("redis %s: %d replicas not attached after 5s", s.Addr(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
