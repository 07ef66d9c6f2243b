package resp

import (
	"bufio"
	"context"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// benchSHA is the one script the decision server knows.
const benchSHA = "0123456789abcdef0123456789abcdef01234567"

// decisionServer answers an EVALSHA of benchSHA with the reply of a
// one-item decision, so that BenchmarkEvalSha measures the client rather
// than redis-server. Any other command gets the error a real server would
// give a script it does not hold, so a benchmark that sent something else
// fails rather than measure it.
func decisionServer(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { l.Close(); wg.Wait() })
	reply := []byte("*4\r\n:1\r\n:9007199254740990\r\n:0\r\n:59999874\r\n")
	noScript := []byte("-NOSCRIPT No matching script. Please use EVAL.\r\n")
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				br, bw := bufio.NewReader(nc), bufio.NewWriter(nc)
				for {
					cmd, err := readReply(br)
					if err != nil {
						return
					}
					if len(cmd.Elems) > 1 && cmd.Elems[0].Str == "EVALSHA" && cmd.Elems[1].Str == benchSHA {
						bw.Write(reply)
					} else {
						bw.Write(noScript)
					}
					if br.Buffered() == 0 && bw.Flush() != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// BenchmarkEvalSha: one decision's EVALSHA, pooled and pipelined, from
// one goroutine and from 50.
func BenchmarkEvalSha(b *testing.B) {
	addr := decisionServer(b)
	sha := benchSHA
	keys := []string{"bench:{throughput:203.0.113.7}"}
	args := []string{"0", "0", "60000000", "0", "9007199254740991", "1", "-61441024", "0"}
	for _, pipelined := range []bool{false, true} {
		for _, callers := range []int{1, 50} {
			name := "pooled"
			if pipelined {
				name = "pipelined"
			}
			b.Run(name+"-"+strconv.Itoa(callers), func(b *testing.B) {
				c, err := New(Options{Addrs: []string{addr}, AutoPipeline: pipelined})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				ctx := context.Background()
				if _, err := c.EvalSha(ctx, sha, keys, args); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				if callers == 1 {
					for i := 0; i < b.N; i++ {
						if _, err := c.EvalSha(ctx, sha, keys, args); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.SetParallelism(callers / runtime.GOMAXPROCS(0))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := c.EvalSha(ctx, sha, keys, args); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkEvalShaPrepared: the same EVALSHA with its arguments prepared
// once (the limiter's call), pipelined, from one goroutine and from 50.
func BenchmarkEvalShaPrepared(b *testing.B) {
	addr := decisionServer(b)
	sha := benchSHA
	key := "bench:{throughput:203.0.113.7}"
	args := []string{"0", "0", "60000000", "0", "9007199254740991", "1", "-61441024", "0"}
	for _, callers := range []int{1, 50} {
		b.Run("pipelined-"+strconv.Itoa(callers), func(b *testing.B) {
			c, err := New(Options{Addrs: []string{addr}, AutoPipeline: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			head, tail := c.PrepareEvalSha(sha, args)
			if _, err := c.EvalShaPrepared(ctx, head, key, tail); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			if callers == 1 {
				for i := 0; i < b.N; i++ {
					if _, err := c.EvalShaPrepared(ctx, head, key, tail); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.SetParallelism(callers / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.EvalShaPrepared(ctx, head, key, tail); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
