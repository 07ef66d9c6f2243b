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
//
// The idle timer runs on the wall clock: the commands in use follow each
// other with no pause, so that only a stall of several IdleTimeouts could
// let it fire, and the closes are waited for, however late they come.
func TestIdleTimeoutClosesPipelinedConn(t *testing.T) {
	const idle = 300 * time.Millisecond
	m := miniredis.RunT(t)
	before := runtime.NumGoroutine()
	c := newTestClient(t, Options{Addrs: []string{m.Addr()}, AutoPipeline: true, IdleTimeout: idle})
	ctx := context.Background()
	for start := time.Now(); time.Since(start) < 3*idle; {
		if _, err := c.Eval(ctx, "return {1}", []string{"k"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.TotalConnectionCount(); n != 1 {
		t.Fatalf("%d connections while in use, want 1", n)
	}
	closed := func() bool {
		deadline := time.Now().Add(time.Minute)
		for (m.CurrentConnectionCount() > 0 || runtime.NumGoroutine() > before) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		return m.CurrentConnectionCount() == 0 && runtime.NumGoroutine() <= before
	}
	if !closed() {
		t.Fatalf("idle: %d connections open, %d goroutines (%d before)", m.CurrentConnectionCount(), runtime.NumGoroutine(), before)
	}
	if v, err := c.Eval(ctx, "return {7}", []string{"k"}, nil); err != nil || len(v) != 1 || v[0] != 7 {
		t.Fatalf("after the idle close: %v, %v", v, err)
	}
	if !closed() {
		t.Fatalf("idle again: %d connections open, %d goroutines (%d before)", m.CurrentConnectionCount(), runtime.NumGoroutine(), before)
	}
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
