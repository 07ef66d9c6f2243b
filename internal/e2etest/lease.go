package e2etest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// LeasesGiveBack checks leases on a hot key across two instances: urlA
// and urlB are one zone of limit 60 a minute, sub-window 10 s, whose
// count is key in rds. Early in a sub-window, 100 GETs alternating
// between them, 8 at a time, are all answered, at most 60 with 200, with
// fewer script calls than requests, and Redis counts 60 (the leases
// count too); once the sub-window ends, every lease has given back what
// it did not spend, and Redis counts the admitted.
func LeasesGiveBack(tb testing.TB, rds *redistest.Server, key, urlA, urlB string) {
	tb.Helper()
	// Start early in a 10 s sub-window (Redis's, on this machine's
	// clock), so that no lease ends, giving back, during the burst.
	WaitFor(tb, 11*time.Second, "the first half of a 10 s sub-window", func() (bool, string) {
		return time.Now().Unix()%10 < 5, time.Now().Format(time.StampMilli)
	})
	calls0 := rds.ScriptCalls(tb)
	statuses := make([]int, 100)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				url := urlA
				if i%2 == 1 {
					url = urlB
				}
				if resp, err := Send(Request{URL: url}); err == nil {
					statuses[i] = resp.Status
				}
			}
		}()
	}
	for i := range statuses {
		next <- i
	}
	close(next)
	wg.Wait()
	calls := rds.ScriptCalls(tb) - calls0
	held := rds.StoredCount(tb, key)
	ok, answered := 0, 0
	for _, s := range statuses {
		if s != 0 {
			answered++
		}
		if s == 200 {
			ok++
		}
	}
	summary := fmt.Sprintf("100 GETs alternating between %s and %s, 8 at a time: %d answered, %d x 200 (limit 60), %d script calls; Redis counts %d", urlA, urlB, answered, ok, calls, held)
	if answered != 100 || ok > 60 || held != 60 || calls >= 100 {
		tb.Fatalf("%s; want 100 answered, at most 60 x 200, Redis counting 60 (the burst passed the limit: the leases count too), fewer script calls than requests", summary)
	}
	// The sub-window ends: every lease gives back what it did not spend.
	// A sleep, not a poll: the count must be the admitted after that
	// moment, and may already be before it.
	time.Sleep(time.Duration(10-time.Now().Unix()%10)*time.Second + 500*time.Millisecond)
	if count := rds.StoredCount(tb, key); count != int64(ok) {
		tb.Fatalf("%s; once the leases ended Redis counts %d, want the %d admitted: unspent units not given back", summary, count, ok)
	}
	tb.Log(summary)
}
