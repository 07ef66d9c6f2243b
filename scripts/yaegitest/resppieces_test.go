package yaegitest

import (
	"testing"
	"time"
)

// respPiecesSource times, under yaegi, the steps of one EVALSHA of
// shared/resp, each on its own. The steps are copies of the client's
// code, since its functions are unexported: "-v1" is the code before
// its calls were cut (a method call per argument, a function call per
// reply line), the others the current one. Keep them in step with shared/resp.
const respPiecesSource = `package resppieces

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

type conn struct{ wbuf []byte }

func (c *conn) writeArray(n int) {
	c.wbuf = append(c.wbuf, '*')
	c.wbuf = strconv.AppendInt(c.wbuf, int64(n), 10)
	c.wbuf = append(c.wbuf, '\r', '\n')
}

func (c *conn) writeBulk(s string) {
	c.wbuf = append(c.wbuf, '$')
	c.wbuf = strconv.AppendInt(c.wbuf, int64(len(s)), 10)
	c.wbuf = append(c.wbuf, '\r', '\n')
	c.wbuf = append(c.wbuf, s...)
	c.wbuf = append(c.wbuf, '\r', '\n')
}

var arrayHeads, bulkHeads = heads("*"), heads("$")

func heads(kind string) [64]string {
	var t [64]string
	for n := range t {
		t[n] = kind + strconv.Itoa(n)
	}
	return t
}

func encodeEval(cmd, body string, keys, args []string) string {
	n := 3 + len(keys) + len(args)
	parts := make([]string, 0, 2*n+2)
	head, bodyHead, numKeys := "", "", strconv.Itoa(len(keys))
	if n < len(arrayHeads) && len(body) < len(bulkHeads) {
		head, bodyHead = arrayHeads[n], bulkHeads[len(body)]
	} else {
		head, bodyHead = "*"+strconv.Itoa(n), "$"+strconv.Itoa(len(body))
	}
	parts = append(parts, head, bulkHeads[len(cmd)], cmd, bodyHead, body, bulkHeads[len(numKeys)], numKeys)
	parts = appendBulks(parts, keys)
	parts = appendBulks(parts, args)
	return strings.Join(append(parts, ""), "\r\n")
}

func appendBulks(parts []string, ss []string) []string {
	for _, s := range ss {
		if len(s) < len(bulkHeads) {
			parts = append(parts, bulkHeads[len(s)], s)
		} else {
			parts = append(parts, "$"+strconv.Itoa(len(s)), s)
		}
	}
	return parts
}

func readLine(r *bufio.Reader) ([]byte, bool) {
	line, err := r.ReadSlice('\n')
	if err != nil || len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, false
	}
	return line[:len(line)-2], true
}

func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 || b[0] == '+' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

func readIntsV1(r *bufio.Reader) []int64 {
	line, _ := readLine(r)
	n, _ := parseInt(line[1:])
	ints := make([]int64, 0, int(n))
	for i := int64(0); i < n; i++ {
		line, _ = readLine(r)
		v, _ := parseInt(line[1:])
		ints = append(ints, v)
	}
	return ints
}

func readInts(r *bufio.Reader) []int64 {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return nil
	}
	end := len(line) - 2
	if end < 1 || line[end] != '\r' || (line[0] != '*' && line[0] != '-') {
		return nil
	}
	n, ok := int64(0), false
	if end == 2 && line[1] >= '0' && line[1] <= '9' {
		n, ok = int64(line[1]-'0'), true
	} else {
		n, ok = parseInt(line[1:end])
	}
	if ok && n > 0 && n <= 16 {
		if ints := bufferedInts(r, int(n)); ints != nil {
			return ints
		}
	}
	return nil // the line-by-line reading of readIntsV1 follows in shared/resp
}

func bufferedInts(r *bufio.Reader, n int) []int64 {
	size := r.Buffered()
	if size > n*24 {
		size = n * 24
	}
	buf, _ := r.Peek(size)
	lines := strings.SplitN(string(buf), "\r\n", n+1)
	if len(lines) <= n {
		return nil
	}
	ints := make([]int64, n)
	var err error
	for i := range ints {
		if len(lines[i]) < 2 || len(lines[i]) > 21 || lines[i][0] != ':' || lines[i][1] == '+' {
			return nil
		}
		if ints[i], err = strconv.ParseInt(lines[i][1:], 10, 64); err != nil {
			return nil
		}
	}
	r.Discard(len(buf) - len(lines[n]))
	return ints
}

func Loop(kind string, n int) time.Duration {
	sha := "0123456789abcdef0123456789abcdef01234567"
	keys := []string{"bench:{throughput:203.0.113.7}"}
	args := []string{"0", "0", "60000000", "0", "9007199254740991", "1", "-61441024", "0"}
	c := &conn{wbuf: make([]byte, 0, 512)}
	reply := strings.Repeat("*4\r\n:1\r\n:9007199254740990\r\n:0\r\n:59999874\r\n", 1)
	sr := strings.NewReader(reply)
	br := bufio.NewReaderSize(sr, 4096)
	var mu sync.Mutex
	sem := make(chan struct{}, 4)
	ctx := context.Background()
	nc1, nc2 := net.Pipe()
	defer nc1.Close()
	defer nc2.Close()
	start := time.Now()
	switch kind {
	case "encode-v1":
		for k := 0; k < n; k++ {
			full := make([]string, 0, 3+len(keys)+len(args))
			full = append(full, "EVALSHA", sha, strconv.Itoa(len(keys)))
			full = append(full, keys...)
			full = append(full, args...)
			c.wbuf = c.wbuf[:0]
			c.writeArray(len(full))
			for _, a := range full {
				c.writeBulk(a)
			}
		}
	case "encode":
		for k := 0; k < n; k++ {
			_ = []byte(encodeEval("EVALSHA", sha, keys, args))
		}
	case "read-v1":
		for k := 0; k < n; k++ {
			sr.Reset(reply)
			br.Reset(sr)
			readIntsV1(br)
		}
	case "read":
		for k := 0; k < n; k++ {
			sr.Reset(reply)
			br.Reset(sr)
			if readInts(br) == nil {
				panic("readInts fell back")
			}
		}
	case "reader-reset":
		for k := 0; k < n; k++ {
			sr.Reset(reply)
			br.Reset(sr)
		}
	case "deadlines":
		for k := 0; k < n; k++ {
			now := time.Now()
			writeBy, readBy := now.Add(time.Second), now.Add(time.Second)
			if d, ok := ctx.Deadline(); ok && d.Before(writeBy) {
				readBy = d
			}
			nc1.SetWriteDeadline(writeBy)
			nc1.SetReadDeadline(readBy)
		}
	case "pool-get-put":
		idle := []*conn{c}
		for k := 0; k < n; k++ {
			select {
			case sem <- struct{}{}:
			default:
			}
			mu.Lock()
			cn := idle[len(idle)-1]
			idle = idle[:len(idle)-1]
			mu.Unlock()
			mu.Lock()
			idle = append(idle, cn)
			mu.Unlock()
			<-sem
		}
	case "mux-call":
		for k := 0; k < n; k++ {
			done := make(chan struct{})
			mu.Lock()
			mu.Unlock()
			select {
			case sem <- struct{}{}:
			default:
			}
			<-sem
			t := time.NewTimer(time.Second)
			close(done)
			select {
			case <-done:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
	}
	return time.Since(start)
}
`

// BenchmarkRespPieces prints the cost of each step of an EVALSHA under
// yaegi, in µs per step (see respPiecesSource).
func BenchmarkRespPieces(b *testing.B) {
	i := newInterpreter(b)
	if _, err := i.Eval(respPiecesSource); err != nil {
		b.Fatal(err)
	}
	loop := evalValue(b, i, "resppieces.Loop").Interface().(func(string, int) time.Duration)
	for _, kind := range []string{"encode-v1", "encode", "read-v1", "read", "reader-reset", "deadlines", "pool-get-put", "mux-call"} {
		b.Run(kind, func(b *testing.B) {
			b.ReportAllocs()
			d := loop(kind, b.N)
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N)/1000, "µs/step")
		})
	}
}
