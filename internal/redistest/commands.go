package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Calls returns how many times the server at addr ran each command, from
// INFO commandstats ("evalsha", "eval", ...).
func Calls(tb testing.TB, addr string) map[string]int64 {
	tb.Helper()
	calls := make(map[string]int64)
	for name, st := range CommandStats(tb, addr) {
		calls[name] = st.Calls
	}
	return calls
}

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	Calls int64 // times the server ran it
	Usec  int64 // microseconds of server CPU it took, in all
}

// CommandStats returns INFO commandstats of the server at addr, by
// command ("evalsha", "eval", ...).
func CommandStats(tb testing.TB, addr string) map[string]CommandStat {
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
	stats := make(map[string]CommandStat)
	for _, line := range strings.Split(string(body), "\r\n") {
		// cmdstat_evalsha:calls=12,usec=345,usec_per_call=...
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || name == line {
			continue
		}
		var st CommandStat
		for _, field := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(field, "=")
			x, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				st.Calls = x
			case "usec":
				st.Usec = x
			}
		}
		stats[name] = st
	}
	return stats
}

// Node returns a Server for Do on a redis-server this package did not
// start, such as a node of Cluster at addr (host:port); it does not stop
// it.
func Node(tb testing.TB, addr string) *Server {
	tb.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatalf("redis node %q: %v", addr, err)
	}
	s := &Server{tb: tb}
	if s.port, err = strconv.Atoi(port); err != nil {
		tb.Fatalf("redis node %q: %v", addr, err)
	}
	return s
}

// Do sends one command to the server, over TLS when it has TLS, and
// returns its reply as strings: a status, integer or bulk string is one
// element (a nil one is ""), an array gives its elements, flattened. An
// error reply fails the test.
func (s *Server) Do(tb testing.TB, args ...string) []string {
	tb.Helper()
	out, err := s.do(args...)
	if err != nil {
		tb.Fatalf("redis %s: %s: %v", s.Addr(), strings.Join(args, " "), err)
	}
	return out
}

func (s *Server) do(args ...string) ([]string, error) {
	c, err := s.dial(time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return nil, err
	}
	var out []string
	err = readReply(bufio.NewReader(c), &out)
	return out, err
}

// readReply appends the strings of one RESP2 reply to out.
func readReply(r *bufio.Reader, out *[]string) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		*out = append(*out, line[1:])
		return nil
	case '-':
		return errors.New(line[1:])
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil {
		return fmt.Errorf("bad reply %q", line)
	}
	switch line[0] {
	case '$':
		if n < 0 {
			*out = append(*out, "")
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		*out = append(*out, string(buf[:n]))
	case '*':
		for i := 0; i < n; i++ {
			if err := readReply(r, out); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("bad reply %q", line)
	}
	return nil
}
