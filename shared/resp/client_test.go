package resp

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// modes runs f with a pooled and with an auto-pipelined client.
func modes(t *testing.T, f func(t *testing.T, pipelined bool)) {
	t.Run("pooled", func(t *testing.T) { f(t, false) })
	t.Run("pipelined", func(t *testing.T) { f(t, true) })
}

func newTestClient(t *testing.T, o Options) *Client {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestOptionsErrors(t *testing.T) {
	for _, o := range []Options{
		{},
		{Addrs: []string{"localhost"}},
		{Addrs: []string{"a:1", "b:2"}, DB: 1},
		{Addrs: []string{"a:1"}, DB: -1},
		{Addrs: []string{"a:1"}, ReadTimeout: -1},
		{Addrs: []string{"a:1"}, PoolSize: -1},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// TestOptionsShortTimeouts: a timeout under MinTimeout would keep the
// auto-pipeline's watchdog spinning; New refuses it, naming it.
func TestOptionsShortTimeouts(t *testing.T) {
	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{DialTimeout: time.Nanosecond}, "resp: dial timeout 1ns is too short (at least 1ms)"},
		{Options{ReadTimeout: time.Nanosecond}, "resp: read timeout 1ns is too short (at least 1ms)"},
		{Options{WriteTimeout: MinTimeout - 1}, "resp: write timeout 999.999µs is too short (at least 1ms)"},
	} {
		tt.o.Addrs = []string{"a:1"}
		tt.o.AutoPipeline = true
		if _, err := New(tt.o); err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v): %v, want %q", tt.o, err, tt.want)
		}
	}
	c, err := New(Options{Addrs: []string{"a:1"}, DialTimeout: MinTimeout, ReadTimeout: MinTimeout, WriteTimeout: MinTimeout})
	if err != nil {
		t.Fatalf("timeouts of MinTimeout: %v", err)
	}
	c.Close()
}

// TestLazyConnect: New never dials; the first command reports the failure.
func TestLazyConnect(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	c := newTestClient(t, Options{Addrs: []string{addr, addr}, DialTimeout: 200 * time.Millisecond})
	if _, err := c.Do(context.Background(), "PING"); err == nil {
		t.Fatal("PING to a closed port succeeded")
	}
}

func TestCommands(t *testing.T) {
	modes(t, func(t *testing.T, pipelined bool) {
		m := miniredis.RunT(t)
		m.RequireUserAuth("limiter", "s3cret")
		m.DB(3).Set("k", "in-db-3")
		c := newTestClient(t, Options{AutoPipeline: pipelined, Addrs: []string{m.Addr()}, Username: "limiter", Password: "s3cret", DB: 3})
		ctx := context.Background()
		if r, err := c.Do(ctx, "GET", "k"); err != nil || r.Str != "in-db-3" {
			t.Fatalf("GET after AUTH+SELECT = %+v, %v", r, err)
		}
		const script = "return {tonumber(ARGV[1]), #KEYS}"
		if _, err := c.EvalSha(ctx, "0000000000000000000000000000000000000000", nil, nil); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
			t.Fatalf("EVALSHA of an unknown script: %v, want NOSCRIPT", err)
		}
		got, err := c.Eval(ctx, script, []string{"a", "b"}, []string{"7"})
		if err != nil || len(got) != 2 || got[0] != 7 || got[1] != 2 {
			t.Fatalf("EVAL = %v, %v", got, err)
		}
		sha, err := c.ScriptLoad(ctx, script)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := c.EvalSha(ctx, sha, []string{"a"}, []string{"9"}); err != nil || got[0] != 9 || got[1] != 1 {
			t.Fatalf("EVALSHA = %v, %v", got, err)
		}
		if _, err := c.Do(ctx, "NOSUCHCOMMAND"); err == nil {
			t.Fatal("an error reply was not an error")
		} else if _, ok := err.(*Error); !ok {
			t.Fatalf("error reply is %T, want *Error", err)
		}
		// The error reply left the connection usable and pooled.
		if r, err := c.Do(ctx, "PING"); err != nil || r.Str != "PONG" {
			t.Fatalf("PING after an error reply = %+v, %v", r, err)
		}
		if m.CurrentConnectionCount() != 1 {
			t.Fatalf("%d connections, want 1 reused", m.CurrentConnectionCount())
		}

		bad := newTestClient(t, Options{AutoPipeline: pipelined, Addrs: []string{m.Addr()}, Username: "limiter", Password: "wrong"})
		if _, err := bad.Do(ctx, "PING"); err == nil || !strings.Contains(err.Error(), "auth") {
			t.Fatalf("wrong password: %v", err)
		}
	})
}

// fakeServer accepts connections and answers each with reply (after
// reading a command); it counts connections.
type fakeServer struct {
	l     net.Listener
	conns int64
}

// testEnd returns a channel closed when t ends: a fake server that must
// never answer waits on it, rather than for a time that a slow machine
// could outlast.
func testEnd(t *testing.T) <-chan struct{} {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return done
}

func startFake(t *testing.T, handle func(c net.Conn, n int64)) *fakeServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n := atomic.AddInt64(&f.conns, 1)
			go func() {
				defer c.Close()
				handle(c, n)
			}()
		}
	}()
	return f
}

// TestBrokenConnNotReused: a connection that sent garbage is closed; the
// next command dials a new one.
func TestBrokenConnNotReused(t *testing.T) {
	modes(t, func(t *testing.T, pipelined bool) {
		f := startFake(t, func(c net.Conn, n int64) {
			buf := make([]byte, 512)
			for {
				if _, err := c.Read(buf); err != nil {
					return
				}
				if n == 1 {
					c.Write([]byte("?garbage\r\n"))
				} else {
					c.Write([]byte("+PONG\r\n"))
				}
			}
		})
		c := newTestClient(t, Options{AutoPipeline: pipelined, Addrs: []string{f.l.Addr().String()}})
		ctx := context.Background()
		if _, err := c.Do(ctx, "PING"); !errors.Is(err, ErrProtocol) {
			t.Fatalf("garbage reply: %v, want ErrProtocol", err)
		}
		if r, err := c.Do(ctx, "PING"); err != nil || r.Str != "PONG" {
			t.Fatalf("after a broken connection: %+v, %v", r, err)
		}
		if n := atomic.LoadInt64(&f.conns); n != 2 {
			t.Fatalf("%d connections, want 2 (the broken one dropped)", n)
		}
	})
}

// TestReadTimeout: a server that never answers costs ReadTimeout, and the
// connection is dropped rather than reused with a late reply in flight.
func TestReadTimeout(t *testing.T) {
	modes(t, func(t *testing.T, pipelined bool) {
		f := startFake(t, func(c net.Conn, n int64) {
			buf := make([]byte, 512)
			for {
				if _, err := c.Read(buf); err != nil {
					return
				}
			}
		})
		c := newTestClient(t, Options{AutoPipeline: pipelined, Addrs: []string{f.l.Addr().String()}, ReadTimeout: 50 * time.Millisecond})
		for i := 0; i < 2; i++ {
			_, err := c.Do(context.Background(), "PING")
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("silent server: %v, want a timeout", err)
			}
		}
		if n := atomic.LoadInt64(&f.conns); n != 2 {
			t.Fatalf("%d connections, want 2 (a timed-out one is never reused)", n)
		}
		// A context deadline shorter than ReadTimeout wins.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		c2 := newTestClient(t, Options{AutoPipeline: pipelined, Addrs: []string{f.l.Addr().String()}, ReadTimeout: time.Hour})
		if _, err := c2.Do(ctx, "PING"); err == nil {
			t.Fatal("no error past the context deadline")
		}
	})
}

// TestPoolBound: with PoolSize 1, concurrent commands share one
// connection, and a command waits for it no longer than ReadTimeout.
func TestPoolBound(t *testing.T) {
	m := miniredis.RunT(t)
	c := newTestClient(t, Options{Addrs: []string{m.Addr()}, PoolSize: 1})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := c.Do(context.Background(), "INCR", "n"); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if n := m.TotalConnectionCount(); n != 1 {
		t.Fatalf("%d connections opened, want 1", n)
	}
	if v, _ := m.Get("n"); v != "160" {
		t.Fatalf("n = %s, want 160", v)
	}

	// Hold the only connection: the next command gives up.
	end := testEnd(t)
	block := startFake(t, func(c net.Conn, n int64) { <-end })
	c2 := newTestClient(t, Options{Addrs: []string{block.l.Addr().String()}, PoolSize: 1, ReadTimeout: 100 * time.Millisecond})
	go c2.Do(context.Background(), "PING")
	for atomic.LoadInt64(&block.conns) == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := c2.Do(context.Background(), "PING"); err != errPoolTimeout && !isTimeout(err) {
		t.Fatalf("full pool: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestPipelined: concurrent commands on an auto-pipelined client share one
// connection and each gets its own reply.
func TestPipelined(t *testing.T) {
	m := miniredis.RunT(t)
	c := newTestClient(t, Options{Addrs: []string{m.Addr()}, AutoPipeline: true})
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := "k" + strings.Repeat("x", i)
			for j := 1; j <= 50; j++ {
				r, err := c.Do(context.Background(), "INCR", key)
				if err != nil || r.Int != int64(j) {
					t.Errorf("INCR %s = %+v, %v; want %d", key, r, err, j)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	if n := m.TotalConnectionCount(); n != 1 {
		t.Fatalf("%d connections, want 1 shared", n)
	}
	// A canceled caller does not disturb the others.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.Do(ctx, "PING")
	if r, err := c.Do(context.Background(), "ECHO", "after"); err != nil || r.Str != "after" {
		t.Fatalf("after a canceled call: %+v, %v", r, err)
	}
}

// TestReconnectAfterRestart: idle connections to a restarted server are
// dead; the first command after the restart still succeeds.
func TestReconnectAfterRestart(t *testing.T) {
	modes(t, func(t *testing.T, pipelined bool) {
		m := miniredis.RunT(t)
		c := newTestClient(t, Options{AutoPipeline: pipelined, Addrs: []string{m.Addr()}})
		ctx := context.Background()
		if _, err := c.Do(ctx, "PING"); err != nil {
			t.Fatal(err)
		}
		m.Close()
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
		if r, err := c.Do(ctx, "PING"); err != nil || r.Str != "PONG" {
			t.Fatalf("after restart: %+v, %v", r, err)
		}
	})
}

func TestTLS(t *testing.T) {
	modes(t, func(t *testing.T, pipelined bool) {
		certs := redistest.WriteCerts(t)
		dir, certFile, keyFile := t.TempDir(), certs.Cert, certs.Key
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		m := miniredis.NewMiniRedis()
		if err := m.StartTLS(&tls.Config{Certificates: []tls.Certificate{pair}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		ctx := context.Background()

		cfg, err := LoadTLS(certFile, "", "", false) // the self-signed cert is its own CA
		if err != nil {
			t.Fatal(err)
		}
		c := newTestClient(t, Options{AutoPipeline: pipelined, Addrs: []string{m.Addr()}, TLS: cfg})
		if r, err := c.Do(ctx, "PING"); err != nil || r.Str != "PONG" {
			t.Fatalf("PING over TLS = %+v, %v", r, err)
		}
		untrusted, _ := LoadTLS("", "", "", false)
		c2 := newTestClient(t, Options{AutoPipeline: pipelined, Addrs: []string{m.Addr()}, TLS: untrusted})
		if _, err := c2.Do(ctx, "PING"); err == nil {
			t.Fatal("an unknown authority was trusted")
		}
		insecure, _ := LoadTLS("", "", "", true)
		c3 := newTestClient(t, Options{AutoPipeline: pipelined, Addrs: []string{m.Addr()}, TLS: insecure})
		if _, err := c3.Do(ctx, "PING"); err != nil {
			t.Fatalf("insecureSkipVerify: %v", err)
		}
		withClientCert, err := LoadTLS(certFile, certFile, keyFile, false)
		if err != nil || len(withClientCert.Certificates) != 1 {
			t.Fatalf("client certificate: %v", err)
		}
		for _, args := range [][4]string{
			{filepath.Join(dir, "missing.pem"), "", "", ""},
			{keyFile, "", "", ""},
			{"", certFile, "", ""},
			{"", certFile, certFile, ""},
		} {
			if _, err := LoadTLS(args[0], args[1], args[2], false); err == nil {
				t.Errorf("LoadTLS(%q, %q, %q) accepted", args[0], args[1], args[2])
			}
		}
	})
}

// TestEvalShaPrepared: a prepared EVALSHA runs the script as EvalSha does
// on keys of any length (past the header tables too) and with no
// arguments, and reports NOSCRIPT as EvalSha does.
func TestEvalShaPrepared(t *testing.T) {
	modes(t, func(t *testing.T, pipelined bool) {
		m := miniredis.RunT(t)
		c := newTestClient(t, Options{AutoPipeline: pipelined, Addrs: []string{m.Addr()}})
		ctx := context.Background()
		sha, err := c.ScriptLoad(ctx, "return {#KEYS, #ARGV, string.len(KEYS[1]), tonumber(ARGV[1] or '-1')}")
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{nil, {"7"}, {"7", strings.Repeat("a", 600)}} {
			head, tail := c.PrepareEvalSha(sha, args)
			for _, key := range []string{"", "k", strings.Repeat("k", 511), strings.Repeat("k", 512), strings.Repeat("k", 4000)} {
				got, err := c.EvalShaPrepared(ctx, head, key, tail)
				want, werr := c.EvalSha(ctx, sha, []string{key}, args)
				if err != nil || werr != nil || len(got) != 4 || got[0] != 1 || got[2] != int64(len(key)) || !equalInts(got, want) {
					t.Fatalf("args %d, key of %d: prepared %v %v, EvalSha %v %v", len(args), len(key), got, err, want, werr)
				}
			}
		}
		head, tail := c.PrepareEvalSha("0000000000000000000000000000000000000000", []string{"1"})
		if _, err := c.EvalShaPrepared(ctx, head, "k", tail); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
			t.Fatalf("prepared EVALSHA of an unknown script: %v, want NOSCRIPT", err)
		}
	})
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
