package resp

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// A pipelined connection idle for IdleTimeout closes, with its goroutines;
// one in use stays; the next command, of either path, dials again.
func TestIdleTimeoutClosesPipelinedConn(t *testing.T) {
	m := miniredis.RunT(t)
	before := runtime.NumGoroutine()
	c := newTestClient(t, Options{Addrs: []string{m.Addr()}, AutoPipeline: true, IdleTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, err := c.Eval(ctx, "return {1}", []string{"k"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.TotalConnectionCount(); n != 1 {
		t.Fatalf("%d connections while in use, want 1", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for (m.CurrentConnectionCount() > 0 || runtime.NumGoroutine() > before) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n, g := m.CurrentConnectionCount(), runtime.NumGoroutine(); n != 0 || g > before {
		t.Fatalf("idle: %d connections open, %d goroutines (%d before)", n, g, before)
	}
	if v, err := c.Eval(ctx, "return {7}", []string{"k"}, nil); err != nil || len(v) != 1 || v[0] != 7 {
		t.Fatalf("after the idle close: %v, %v", v, err)
	}
	time.Sleep(time.Second)
	if r, err := c.Do(ctx, "PING"); err != nil || r.Str != "PONG" {
		t.Fatalf("after the idle close: %+v, %v", r, err)
	}
	if n := m.TotalConnectionCount(); n != 3 {
		t.Errorf("%d connections in all, want 3", n)
	}
}

func TestIdleTimeoutNegative(t *testing.T) {
	if _, err := New(Options{Addrs: []string{"localhost:6379"}, IdleTimeout: -1}); err == nil {
		t.Fatal("a negative idle timeout was accepted")
	}
}
