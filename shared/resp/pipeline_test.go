package resp

import (
	"bufio"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
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
	case <-time.After(5 * time.Second):
		t.Fatalf("%q: no reply in 5s", in)
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
