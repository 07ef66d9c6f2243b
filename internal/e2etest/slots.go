package e2etest

import (
	"sync"
	"testing"
	"time"
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

// SlotAndRateBurst sends requests of key from clients at once, spread over
// urls, each client again 20ms after a refusal, until d has passed (at
// most 200 requests a client). It tells a refused slot from a refused
// rate by X-Ratelimit-Limit: slotLimit for the slot's, rateLimit for the
// rate's, and returns how many were served and refused by each.
func SlotAndRateBurst(tb testing.TB, key string, clients int, d time.Duration, slotLimit, rateLimit string, urls ...string) (served, bySlot, byRate int) {
	tb.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	until := time.Now().Add(d)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(until) && i < 200; i++ {
				req, resp := Get(tb, urls[(c+i)%len(urls)], "X-Key", key)
				limit := resp.Header.Get("X-Ratelimit-Limit")
				mu.Lock()
				switch {
				case resp.Status == 200:
					served++
				case resp.Status == 429 && limit == slotLimit && resp.Header.Get("Retry-After") == "1":
					bySlot++
				case resp.Status == 429 && limit == rateLimit:
					byRate++
				default:
					tb.Errorf("%v: %v, want 200, or 429 of the slot (limit %s, Retry-After 1) or of the rate (limit %s)", req, resp, slotLimit, rateLimit)
				}
				mu.Unlock()
				if resp.Status != 200 {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return served, bySlot, byRate
}
