package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// downRunner fails every script call while down is set.
type downRunner struct {
	down atomic.Bool
}

var errDown = errors.New("connection refused")

func (r *downRunner) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	if r.down.Load() {
		return nil, errDown
	}
	return nil, errors.New("NOSCRIPT")
}

func (r *downRunner) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	if r.down.Load() {
		return nil, errDown
	}
	if len(keys) == 0 {
		return []int64{0}, nil // Ping
	}
	return nil, errors.New("unexpected call")
}

func TestNewRedisGuardLogs(t *testing.T) {
	run := new(downRunner)
	run.down.Store(true)
	store, err := NewRedisStore(run, RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		events []GuardEvent
	)
	g, err := NewRedisGuard(store, FailDeny, nil, func(e GuardEvent) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	z := newZone(t, "test", Rule{Window: time.Minute, Limit: 5}, Options{})
	items := []Item{{Zone: z, Key: "k"}}
	out := make([]Decision, 1)
	if allowed, err := g.Take(context.Background(), time.Now(), items, out); allowed || err != nil {
		t.Fatalf("Take with redis down = %v, %v; want denied by the policy", allowed, err)
	}
	run.down.Store(false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(events)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 {
		t.Fatalf("events %+v, want a failure and a recovery", events)
	}
	spell := &Spelling{FieldOnStoreError: "<OnError>"}
	failed, back := events[0], events[1]
	if !errors.Is(failed.Err, errDown) || failed.Policy != FailDeny || failed.OutOfMemory() {
		t.Errorf("failure event %+v", failed)
	}
	if got, want := failed.Line(spell), "redis store failed: "; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "connection refused; requests decided by <OnError> deny") {
		t.Errorf("failure line %q", got)
	}
	if got := failed.Message(spell); got != "redis store failed; requests decided by <OnError> deny" {
		t.Errorf("failure message %q", got)
	}
	if back.Err != nil || back.Down <= 0 || !strings.HasPrefix(back.Line(spell), "redis store answers again after ") {
		t.Errorf("recovery event %+v: %q", back, back.Line(spell))
	}
}

func TestGuardEventOutOfMemory(t *testing.T) {
	e := GuardEvent{Err: ErrOutOfMemory, Suppressed: 3, Policy: FailLocal}
	spell := &Spelling{FieldOnStoreError: "<OnError>"}
	if !e.OutOfMemory() {
		t.Fatal("ErrOutOfMemory is not out of memory")
	}
	want := "redis is out of memory (maxmemory reached): requests it would admit cannot be counted and are decided by <OnError> local; raise maxmemory or see the sizing guide"
	if got := e.Message(spell); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if got := e.Line(spell); got != want+"; 3 more errors since the last line" {
		t.Errorf("line %q", got)
	}
}

func TestNewRedisGuardErrors(t *testing.T) {
	if _, err := NewRedisGuard(nil, FailAllow, nil, nil); err == nil {
		t.Error("nil store accepted")
	}
	store, err := NewRedisStore(new(downRunner), RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewRedisGuard(store, FailLocal+1, nil, nil)
	if fe, ok := err.(*FieldError); !ok || fe.Field != FieldOnStoreError {
		t.Errorf("unknown policy: %#v, want a *FieldError of the policy", err)
	}
}

func TestGuardEventOverloaded(t *testing.T) {
	e := GuardEvent{Err: fmt.Errorf("pipeline: %w", ErrOverloaded), Suppressed: 2, Policy: FailAllow}
	spell := &Spelling{FieldOnStoreError: "<OnError>"}
	if !e.Overloaded() || e.OutOfMemory() {
		t.Fatal("a wrapped ErrOverloaded is not overloaded")
	}
	want := "redis calls waited too long behind this instance's own and were not sent (load here, not a redis failure); requests decided by <OnError> allow"
	if got := e.Message(spell); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if got := e.Line(spell); got != want+"; 2 more errors since the last line" {
		t.Errorf("line %q", got)
	}
	if (&GuardEvent{Err: errDown}).Overloaded() || (&GuardEvent{}).Overloaded() {
		t.Error("a failure or a recovery is overloaded")
	}
}
