package resp

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"testing"
)

// serveCommands starts a fake server that answers each command with what
// answer returns, a raw RESP reply.
func serveCommands(t *testing.T, answer func(args []string) string) *fakeServer {
	return startFake(t, func(c net.Conn, n int64) {
		br := bufio.NewReader(c)
		for {
			cmd, err := readReply(br)
			if err != nil {
				return
			}
			args := make([]string, len(cmd.Elems))
			for i, e := range cmd.Elems {
				args[i] = e.Str
			}
			if _, err := c.Write([]byte(answer(args))); err != nil {
				return
			}
		}
	})
}

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// TestAskingRefused: a node that refuses ASKING (an ACL user without it
// gets NOPERM) still answers the command that follows it. That reply must
// be read with it, or the connection goes back to the pool one reply
// behind and the next command on it gets the previous one's reply.
func TestAskingRefused(t *testing.T) {
	modes(t, func(t *testing.T, pipelined bool) {
		var a, b *fakeServer
		slots := func() string {
			node := func(f *fakeServer) string {
				_, port, _ := net.SplitHostPort(f.l.Addr().String())
				return "*2\r\n" + bulk("127.0.0.1") + ":" + port + "\r\n"
			}
			return "*2\r\n*3\r\n:0\r\n:8191\r\n" + node(a) + "*3\r\n:8192\r\n:16383\r\n" + node(b)
		}
		// a holds "bar" (slot 5061) but is migrating it to b; b holds "foo"
		// (slot 12182) and refuses ASKING.
		a = serveCommands(t, func(args []string) string {
			if args[0] == "CLUSTER" {
				return slots()
			}
			return "-ASK " + strconv.Itoa(Slot(args[1])) + " " + b.l.Addr().String() + "\r\n"
		})
		b = serveCommands(t, func(args []string) string {
			switch args[0] {
			case "CLUSTER":
				return slots()
			case "ASKING":
				return "-NOPERM this user has no permissions to run the 'asking' command\r\n"
			}
			return bulk(args[1])
		})
		c := newTestClient(t, Options{Addrs: []string{a.l.Addr().String()}, Cluster: true, AutoPipeline: pipelined})
		ctx := context.Background()
		for i := 0; i < 3; i++ {
			if r, err := c.DoKey(ctx, "bar", "GET", "bar"); err == nil && r.Str != "bar" {
				t.Fatalf("GET bar after a refused ASKING = %q", r.Str)
			}
			if r, err := c.DoKey(ctx, "foo", "GET", "foo"); err != nil || r.Str != "foo" {
				t.Fatalf("GET foo after a refused ASKING = %+v, %v; want its own reply", r, err)
			}
		}
	})
}
