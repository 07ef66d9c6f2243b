package yaegitest

import (
	"bufio"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// respSource calls resp.Client.EvalSha n times from one goroutine, with the
// keys and arguments of a one-item decision, and returns the time taken.
const respSource = `package respbench

import (
	"context"
	"errors"
	"time"

	"github.com/windowlimit/windowlimit/shared/resp"
)

func Loop(addr string, pipelined bool, n int) (time.Duration, error) {
	c, err := resp.New(resp.Options{Addrs: []string{addr}, ReadTimeout: 5 * time.Second, AutoPipeline: pipelined})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx := context.Background()
	sha := "0123456789abcdef0123456789abcdef01234567"
	keys := []string{"bench:{throughput:203.0.113.7}"}
	args := []string{"0", "0", "60000000", "0", "9007199254740991", "1", "-61441024", "0"}
	// The reply every call below gets: an admission of four integers, as
	// the store would read it.
	res, err := c.EvalSha(ctx, sha, keys, args)
	if err != nil {
		return 0, err
	}
	if len(res) != 4 || res[0] != 1 {
		return 0, errors.New("the script's reply is no admission of four integers")
	}
	start := time.Now()
	for k := 0; k < n; k++ {
		if _, err := c.EvalSha(ctx, sha, keys, args); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}
`

// fakeRedis answers every command it reads as the limiter script would a
// one-item decision that admits, at compiled speed, so that a benchmark
// against it measures the client alone rather than redis-server sharing the
// machine: four integers for a take, with the receipt and the key's
// generation for a reserve, and with no lease granted and the generation
// for a lease (the mode is the sixth word of an EVALSHA on one key). The
// decision is one a limit of 60000 could take (the plugin's benchmark), so
// that the plugin writes its headers from its table rather than formatting
// them. calls counts the commands it answered.
func fakeRedis(tb testing.TB) (addr string, calls *atomic.Int64) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	calls = new(atomic.Int64)
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go serveFake(nc, calls)
		}
	}()
	return l.Addr().String(), calls
}

// The fake's replies, by the script's mode.
var (
	fakeTake    = []byte("*4\r\n:1\r\n:59999\r\n:0\r\n:59999874\r\n")
	fakeReserve = []byte("*6\r\n:1\r\n:59999\r\n:0\r\n:59999874\r\n:1760000000000000\r\n:7\r\n")
	fakeLease   = []byte("*7\r\n:1\r\n:59999\r\n:0\r\n:59999874\r\n:0\r\n:0\r\n:7\r\n")
)

// serveFake reads whole commands (arrays of bulk strings) and writes one
// reply per command, flushing when no more input is buffered.
func serveFake(nc net.Conn, calls *atomic.Int64) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	bw := bufio.NewWriter(nc)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil || len(line) < 3 || line[0] != '*' {
			return
		}
		n, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil {
			return
		}
		reply := fakeTake
		for i := 0; i < n; i++ {
			line, err = br.ReadSlice('\n')
			if err != nil || len(line) < 3 || line[0] != '$' {
				return
			}
			size, err := strconv.Atoi(string(line[1 : len(line)-2]))
			if err != nil {
				return
			}
			word, err := br.Peek(size)
			if err != nil {
				return
			}
			if i == 5 && size == 1 && word[0] == '1' {
				reply = fakeReserve
			} else if i == 5 && size == 1 && word[0] == '2' {
				reply = fakeLease
			}
			if _, err := br.Discard(size + 2); err != nil {
				return
			}
		}
		calls.Add(1)
		bw.Write(reply)
		if br.Buffered() == 0 {
			if bw.Flush() != nil {
				return
			}
		}
	}
}

// BenchmarkRespInterpreted times one EvalSha of a decision through yaegi,
// from one goroutine, against fakeRedis: the client's own cost per
// decision, interpreted, without the store or redis-server. cpu-µs/call
// includes fakeRedis's share, a few µs compiled.
func BenchmarkRespInterpreted(b *testing.B) {
	addr, _ := fakeRedis(b)
	i := newInterpreter(b)
	if _, err := i.Eval(respSource); err != nil {
		b.Fatal(err)
	}
	loop := evalValue(b, i, "respbench.Loop").Interface().(func(string, bool, int) (time.Duration, error))
	for _, pipelined := range []bool{false, true} {
		name := "pooled"
		if pipelined {
			name = "pipelined"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime(b)
			d, err := loop(addr, pipelined, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N)/1000, "µs/call")
			b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-µs/call")
		})
	}
}
