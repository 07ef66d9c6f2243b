package e2etest

import (
	"sync"
	"testing"
)

// SlotBurst sends clients x each GETs with X-Key key at once, spread over
// urls, and returns how many got 200 and how many 429; any other answer,
// or a 429 without Retry-After: 1, fails tb.
func SlotBurst(tb testing.TB, key string, clients, each int, urls ...string) (ok, refused int) {
	tb.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				req, resp := Get(tb, urls[(c+i)%len(urls)], "X-Key", key)
				mu.Lock()
				switch {
				case resp.Status == 200:
					ok++
				case resp.Status == 429 && resp.Header.Get("Retry-After") == "1":
					refused++
				default:
					tb.Errorf("%v: %v, want 200, or 429 with Retry-After 1", req, resp)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ok, refused
}
