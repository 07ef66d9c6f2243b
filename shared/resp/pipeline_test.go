package resp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// pipelinedInts reads in, as the replies to two integer-array commands,
// through a pipelined connection's reader, and returns what the first
// command got.
func pipelinedInts(t *testing.T, in string, bytewise bool) ([]int64, error) {
	client, server := net.Pipe()
	defer server.Close()
	m := &muxConn{
		c:    &conn{nc: client, br: bufio.NewReaderSize(client, 4096)},
		opts: &Options{ReadTimeout: time.Second, WriteTimeout: time.Second},
		wake: make(chan struct{}, 1),
	}
	first := &call{ints: true, done: make(chan struct{})}
	second := &call{ints: true, done: make(chan struct{})}
	m.pending = []*call{first, second}
	go m.readLoop()
	go func() {
		if !bytewise {
			server.Write([]byte(in))
		} else {
			for i := 0; i < len(in); i++ {
				if _, err := server.Write([]byte{in[i]}); err != nil {
					return
				}
			}
		}
		server.Close()
	}()
	select {
	case <-first.done:
	case <-time.After(time.Minute): // a hang, not slowness
		t.Fatalf("%q: no reply in a minute", in)
	}
	m.fail(errClosed)
	return first.vals, first.err
}

// FuzzPipelinedInts: the pipelined reader, which inlines readInts, reads
// the same integers and errors from the same replies as readInts, whole
// in its buffer or a byte at a time.
func FuzzPipelinedInts(f *testing.F) {
	for _, s := range []string{
		"*4\r\n:1\r\n:9007199254740990\r\n:0\r\n:-59999874\r\n", "*2\r\n:1\r\n:-2\r\n*1\r\n:3\r\n", "-NOSCRIPT x\r\n",
		"*1\r\n$1\r\nx\r\n", "*3\r\n:1\r\n", "*2\r\n:+1\r\n:2\r\n", "*1\r\n:99999999999999999999\r\n", "*0\r\n", "*12\r\n:1\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, in []byte, bytewise bool) {
		want, werr := readInts(bufio.NewReaderSize(strings.NewReader(string(in)), 4096))
		got, err := pipelinedInts(t, string(in), bytewise)
		_, wantReply := werr.(*Error)
		_, gotReply := err.(*Error)
		switch {
		case werr == nil && (err != nil || !reflect.DeepEqual(got, want)):
			t.Fatalf("%q: pipelined %v %v, readInts %v", in, got, err, want)
		case wantReply && (!gotReply || err.Error() != werr.Error()):
			t.Fatalf("%q: pipelined %v %v, readInts error reply %v", in, got, err, werr)
		case werr != nil && !wantReply && (err == nil || gotReply):
			t.Fatalf("%q: pipelined %v %v, readInts failed with %v", in, got, err, werr)
		}
	})
}

// TestPipelinedIntsConcurrent: callers that write their own command and
// callers whose commands queue behind a write in flight each get their
// own reply.
func TestPipelinedIntsConcurrent(t *testing.T) {
	m := miniredis.RunT(t)
	c := newTestClient(t, Options{Addrs: []string{m.Addr()}, AutoPipeline: true})
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				want := int64(i*1000 + j)
				got, err := c.Eval(context.Background(), "return {tonumber(ARGV[1]), 7}", nil, []string{strconv.FormatInt(want, 10)})
				if err != nil || len(got) != 2 || got[0] != want || got[1] != 7 {
					t.Errorf("caller %d, call %d: %v, %v; want [%d 7]", i, j, got, err, want)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	if n := m.TotalConnectionCount(); n != 1 {
		t.Fatalf("%d connections, want 1 shared", n)
	}
}

// TestPipelinedTimeoutBound: on a shared connection, a command to a
// server that never answers, or never reads what a caller writes itself,
// fails with a timeout after the write and read timeouts, and at most
// one watchdog look (an eighth of them) later; the connection is then
// replaced.
func TestPipelinedTimeoutBound(t *testing.T) {
	end := testEnd(t)
	f := startFake(t, func(c net.Conn, n int64) {
		if n == 1 {
			io.Copy(io.Discard, c) // reads, never answers
			return
		}
		<-end // never reads
	})
	const timeout = 100 * time.Millisecond
	c := newTestClient(t, Options{Addrs: []string{f.l.Addr().String()}, AutoPipeline: true, ReadTimeout: timeout, WriteTimeout: timeout})
	for _, arg := range []string{"1", strings.Repeat("x", 32<<20)} {
		// The server never answers and never closes before the test
		// ends: only the client's timeouts end the call, or, if its
		// watchdog never fired, this context, which no slowness reaches.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		start := time.Now()
		_, err := c.EvalSha(ctx, "0123456789abcdef0123456789abcdef01234567", nil, []string{arg})
		took := time.Since(start)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) || !isTimeout(err) {
			t.Fatalf("argument of %d bytes: %v after %v, want the client's timeout", len(arg), err, took)
		}
		// Not before the write and read timeouts. How close to them the
		// call ends is a matter of the machine's speed (encoding 32 MB
		// takes seconds under -race on a busy machine), not of behaviour:
		// the watchdog's bound, 2 timeouts and one look, holds on an idle
		// machine only.
		if took < 2*timeout {
			t.Errorf("argument of %d bytes: timed out after %v, before the %v of the write and read timeouts", len(arg), took, 2*timeout)
		}
	}
	if n := atomic.LoadInt64(&f.conns); n != 2 {
		t.Fatalf("%d connections, want 2 (a timed-out one is never reused)", n)
	}
}

// TestPipelinedOutlivesDialDeadline: the handshake's deadline (AUTH and
// SELECT, or TLS) does not stay on a shared connection, which reads and
// writes without one: commands that run past the dial timeout after the
// dial, while the connection is busy, all succeed on that one connection.
func TestPipelinedOutlivesDialDeadline(t *testing.T) {
	m := miniredis.RunT(t)
	m.RequireAuth("s3cret")
	const dial = 150 * time.Millisecond
	c := newTestClient(t, Options{Addrs: []string{m.Addr()}, AutoPipeline: true, Password: "s3cret", DialTimeout: dial, ReadTimeout: time.Second})
	start := time.Now()
	// Until past the dial deadline, and once more after it however slowly
	// the loop ran.
	for done := false; !done; {
		done = time.Since(start) >= 3*dial
		if got, err := c.Eval(context.Background(), "return {7}", nil, nil); err != nil || len(got) != 1 || got[0] != 7 {
			t.Fatalf("%v after the first command: %v, %v", time.Since(start), got, err)
		}
	}
	if n := m.TotalConnectionCount(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}
