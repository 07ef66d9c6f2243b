package guard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// downStore is a remote store that fails every call while down is set,
// its probe (Ping) included, and admits every request otherwise. The
// guard's tests cannot use redisstore, which uses the guard.
type downStore struct {
	down atomic.Bool
}

var errDown = errors.New("connection refused")

func (s *downStore) Take(_ context.Context, _ time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	if s.down.Load() {
		return false, errDown
	}
	return fakeStore{}.Take(nil, time.Time{}, items, out)
}

func (s *downStore) Ping(context.Context) error {
	if s.down.Load() {
		return errDown
	}
	return nil
}

// errOutOfMemory stands for redisstore.ErrOutOfMemory, with its text: a
// request the store would admit but could not count. (redisstore's
// TestOutOfMemoryEvent holds the event of the real one.)
var errOutOfMemory = errors.New("redis is out of memory (maxmemory reached): requests it would admit cannot be counted; raise maxmemory or see the sizing guide")

func TestNewLoggedLogs(t *testing.T) {
	store := new(downStore)
	store.down.Store(true)
	var (
		mu     sync.Mutex
		events []Event
	)
	g, err := NewLogged(store, redisOptions(FailDeny), func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	z := newZone(t, "test", ratelimit.Rule{Window: time.Minute, Limit: 5}, ratelimit.Options{})
	items := []ratelimit.Item{{Zone: z, Key: "k"}}
	out := make([]ratelimit.Decision, 1)
	if allowed, err := g.Take(context.Background(), time.Now(), items, out); allowed || err != nil {
		t.Fatalf("Take with redis down = %v, %v; want denied by the policy", allowed, err)
	}
	store.down.Store(false)
	deadline := time.Now().Add(time.Minute) // a recovery that never comes, not a slow one
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
	spell := &ratelimit.Spelling{FieldOnStoreError: "<OnError>"}
	failed, back := events[0], events[1]
	if !errors.Is(failed.Err, errDown) || failed.Policy != FailDeny || failed.NotCounted() {
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
	var e Event
	g, err := NewLogged(fakeStore{}, redisOptions(FailLocal), func(got Event) { e = got })
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.oomErrs.emit(errOutOfMemory, 3)
	spell := &ratelimit.Spelling{FieldOnStoreError: "<OnError>"}
	if !e.NotCounted() || e.Store != "redis" || e.Policy != FailLocal {
		t.Fatalf("event %+v: ErrOutOfMemory is not a request the store could not count", e)
	}
	want := "redis is out of memory (maxmemory reached): requests it would admit cannot be counted; raise maxmemory or see the sizing guide; they are decided by <OnError> local"
	if got := e.Message(spell); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if got := e.Line(spell); got != want+"; 3 more errors since the last line" {
		t.Errorf("line %q", got)
	}
}

func TestNewLoggedErrors(t *testing.T) {
	if _, err := NewLogged(nil, redisOptions(FailAllow), nil); err == nil {
		t.Error("nil store accepted")
	}
	_, err := NewLogged(new(downStore), redisOptions(FailLocal+1), nil)
	if fe, ok := err.(*ratelimit.FieldError); !ok || fe.Field != FieldOnStoreError {
		t.Errorf("unknown policy: %#v, want a *FieldError of the policy", err)
	}
}

func TestGuardEventOverloaded(t *testing.T) {
	e := Event{Err: fmt.Errorf("pipeline: %w", ErrOverloaded), Suppressed: 2, Policy: FailAllow, Store: "redis"}
	spell := &ratelimit.Spelling{FieldOnStoreError: "<OnError>"}
	if !e.Overloaded() || e.NotCounted() {
		t.Fatal("a wrapped ErrOverloaded is not overloaded")
	}
	want := "redis calls waited too long behind this instance's own and were not sent (load here, not a redis failure); requests decided by <OnError> allow"
	if got := e.Message(spell); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if got := e.Line(spell); got != want+"; 2 more errors since the last line" {
		t.Errorf("line %q", got)
	}
	if (&Event{Err: errDown}).Overloaded() || (&Event{}).Overloaded() {
		t.Error("a failure or a recovery is overloaded")
	}
}

// redisOptions are the options the hosts give the guard of a Redis store.
func redisOptions(p FailurePolicy) Options {
	return Options{OnError: p, Store: "redis", NotCounted: errOutOfMemory}
}

// fakeStore admits every request.
type fakeStore struct{}

func (fakeStore) Take(_ context.Context, _ time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	for i := range out {
		out[i] = ratelimit.Decision{Allowed: true}
	}
	return true, nil
}
