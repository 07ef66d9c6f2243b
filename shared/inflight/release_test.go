package inflight

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// slowRelease is a Remote whose every call takes a millisecond, as a
// loaded Redis behind an interpreted client does: it records the members
// each Release frees.
type slowRelease struct {
	Remote
	mu       sync.Mutex
	n        int
	calls    int
	released map[string]bool
}

func (s *slowRelease) Key(zone, key string) string { return zone + ":" + key }
func (s *slowRelease) Take(context.Context, string, int64, time.Duration) (string, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return "m" + strconv.Itoa(s.n), 1, nil
}
func (s *slowRelease) Release(ctx context.Context, set string, members ...string) error {
	time.Sleep(time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	for _, m := range members {
		s.released[m] = true
	}
	return nil
}

// TestLimiterReleasesKeepUp: 20,000 releases of one key arriving faster
// than Redis answers one call at a time all reach Redis, none is left to
// expire, in batches (far fewer calls than releases); a release that
// finds the queue full waits for its own call rather than dropping it.
// Without batches, 4 workers at 1 ms a call free 4,000 slots a second.
func TestLimiterReleasesKeepUp(t *testing.T) {
	r := &slowRelease{released: make(map[string]bool)}
	l, err := New(Options{Zone: "api", Remote: r})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const total = 20000
	for i := 0; i < total; i++ {
		s, _, ok := l.Take(context.Background(), "k", total, time.Now())
		if !ok {
			t.Fatal("refused")
		}
		l.Release(s)
	}
	waitFor(t, 10*time.Second, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.released) == total
	})
	r.mu.Lock()
	calls := r.calls
	r.mu.Unlock()
	t.Logf("%d releases in %d calls", total, calls)
	if calls > total/4 {
		t.Fatalf("%d releases took %d calls: not batched", total, calls)
	}
}
