//go:build !race

package e2e

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

const (
	resetLimit = 3000            // the hot key's limit a minute
	resetSub   = 6 * time.Second // its sub-window: subWindow's default, W/10
)

// burstResult is what scripts/e2e/burst counted.
type burstResult struct {
	ok, total, errors int
	tally             string
}

// burst sends n requests to urls in turn, c at a time, all ended by
// deadline.
func burst(t *testing.T, n, c int, deadline time.Duration, urls ...string) burstResult {
	t.Helper()
	args := []string{"-urls", strings.Join(urls, ","), "-n", strconv.Itoa(n), "-c", strconv.Itoa(c), "-deadline", deadline.String()}
	lines, stderr := traefiktest.Run(t, traefiktest.Program(t, "burst"), deadline+10*time.Second, args...)
	if stderr != "" {
		t.Fatalf("burst %s: %s", strings.Join(args, " "), stderr)
	}
	var r burstResult
	var parts []string
	for _, l := range lines {
		status, count, _ := strings.Cut(l, " ")
		k, _ := strconv.Atoi(count)
		r.total += k
		switch status {
		case "200":
			r.ok = k
		case "error":
			r.errors = k
		}
		parts = append(parts, status+" x "+count)
	}
	r.tally = strings.Join(parts, ", ")
	return r
}

// subWindowStart waits, at most one sub-window, until the current
// sub-window (on this machine's clock, which the redis-server shares)
// started less than half a second ago.
func subWindowStart(t *testing.T) {
	t.Helper()
	traefiktest.WaitFor(t, resetSub+time.Second, "the start of a sub-window", func() (bool, string) {
		since := time.Duration(time.Now().UnixNano() % int64(resetSub))
		return since < 500*time.Millisecond, since.String() + " into the sub-window"
	})
}

// sendFrom sends a GET of url from the address from with X-Status: status
// and returns the response's status and X-RateLimit-Remaining.
func sendFrom(t *testing.T, from, url, status string, timeout time.Duration) (int, string) {
	r := traefiktest.Request{URL: url, From: from, Header: []string{"X-Status", status}, Timeout: timeout}
	resp, err := traefiktest.Send(r)
	if err != nil {
		t.Errorf("%v: %v", r, err)
		return 0, ""
	}
	return resp.Status, resp.Header.Get("X-RateLimit-Remaining")
}

// TestE2EReset checks that a reset is a reset, on two instances sharing a
// redis-server, the key deleted in Redis directly (as when Redis loses
// it; Traefik has no admin API): what was taken from a key's old life is
// neither spent nor given back in the new one.
func TestE2EReset(t *testing.T) {
	t.Parallel()
	be := traefiktest.StartBackend(t)
	rds := redistest.Start(t)
	data := map[string]any{"Backend": be.URL(), "Redis": rds.Addr(), "Limit": resetLimit}
	a, b := twoInstances(t, "fixtures/reset/dynamic.yml", data)
	lose := func(key string) {
		t.Helper()
		if got := rds.Do(t, "DEL", key); len(got) != 1 || got[0] != "1" {
			t.Fatalf("DEL %s: %v, want 1: no such key", key, got)
		}
	}

	// A hot key (limit 3000 a minute) warmed up by 600 requests, 8 at a
	// time, alternating, early in a sub-window, until the instances lease
	// (fewer script calls than requests), is deleted; a burst of 4 x the
	// limit right after, 16 at a time, alternating, all within 40 s, gets
	// at most the limit plus a tenth (the leases' units cannot be read in
	// Traefik; the excess is printed).
	t.Run("leases/a hot key deleted in redis", func(t *testing.T) {
		subWindowStart(t)
		calls0 := rds.ScriptCalls(t)
		warm := burst(t, 600, 8, 20*time.Second, a.URL("/big"), b.URL("/big"))
		calls := rds.ScriptCalls(t) - calls0
		if warm.total != 600 || warm.errors != 0 {
			t.Fatalf("warm-up of 600 GETs of /big alternating, 8 at a time: %s, want 600 responses", warm.tally)
		}
		if calls >= 600 {
			t.Fatalf("warm-up: %d script calls for 600 requests (%s): no lease spared one, the key is not hot", calls, warm.tally)
		}
		lose("rst:big-limit@file:{127.0.0.1}")
		n := 4 * resetLimit
		t0 := time.Now()
		r := burst(t, n, 16, 40*time.Second, a.URL("/big"), b.URL("/big"))
		took := time.Since(t0)
		if r.total != n || r.errors != 0 {
			t.Fatalf("the burst after the reset: %s, want %d responses within 40 s", r.tally, n)
		}
		bound := resetLimit + resetLimit/10
		summary := fmt.Sprintf("warm-up %s (%d script calls), leases unknown (Traefik shows none) at the reset; the window after it admitted %d of %d GETs of /big in %.2f s (limit %d, at most %d, the limit plus a tenth): %d over the limit; %s",
			warm.tally, calls, r.ok, n, took.Seconds(), resetLimit, bound, max(r.ok-resetLimit, 0), r.tally)
		if r.ok > bound {
			t.Errorf("%s: over the limit plus a tenth", summary)
		} else {
			t.Log(summary)
		}
	})

	// countStatus ["401"] with limit 5: from the address from, five
	// requests to url that end in 200 after 3 s reserve the whole budget;
	// once Redis counts all five, the key is deleted; five 401s to url2
	// each get 401 (a fresh budget, Remaining 4..0); the slow five end in
	// 200; and five more 401s to url2 each get 429: the slow ones' refunds
	// are of the old life and give nothing back to the new one. It starts
	// early in a sub-window, so that the slow ones and the fresh 401s are
	// counted in the same one.
	countStatus := func(t *testing.T, url, from, url2 string) {
		key := "rst:cs-limit@file:{" + from + "}"
		subWindowStart(t)
		type result struct {
			status    int
			remaining string
		}
		slow := make([]result, 5)
		var wg sync.WaitGroup
		for i := range slow {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, r := sendFrom(t, from, url+"?wait=3s", "200", 15*time.Second)
				slow[i] = result{s, r}
			}()
		}
		traefiktest.WaitFor(t, 3*time.Second, "the five slow requests counted in redis", func() (bool, string) {
			n := rds.StoredCount(t, key)
			return n == 5, fmt.Sprintf("%s holds %d", key, n)
		})
		lose(key)
		var fresh, remaining, after []string
		for range 5 {
			s, r := sendFrom(t, from, url2, "401", 5*time.Second)
			fresh, remaining = append(fresh, strconv.Itoa(s)), append(remaining, r)
		}
		wg.Wait()
		var slowCodes, slowRem []string
		for _, r := range slow {
			slowCodes, slowRem = append(slowCodes, strconv.Itoa(r.status)), append(slowRem, r.remaining)
		}
		sort.Strings(slowRem)
		for range 5 {
			s, _ := sendFrom(t, from, url2, "401", 5*time.Second)
			after = append(after, strconv.Itoa(s))
		}
		seq := fmt.Sprintf("from %s: slow 200s in flight (%s?wait=3s [X-Status: 200]): %s (Remaining %s at their check); after DEL %s, 5 x 401 (%s [X-Status: 401]): %s (Remaining %s); once the slow ones ended, 5 x 401: %s",
			from, url, strings.Join(slowCodes, " "), strings.Join(slowRem, " "), key, url2, strings.Join(fresh, " "), strings.Join(remaining, " "), strings.Join(after, " "))
		if strings.Join(slowCodes, " ") != "200 200 200 200 200" || strings.Join(slowRem, " ") != "0 1 2 3 4" {
			t.Fatalf("%s; want the slow ones 200 with Remaining 0 1 2 3 4 (all five counted before the reset)", seq)
		}
		if strings.Join(fresh, " ") != "401 401 401 401 401" || strings.Join(remaining, " ") != "4 3 2 1 0" {
			t.Fatalf("%s; want 401 x 5 with Remaining 4 3 2 1 0 after the reset (a fresh budget)", seq)
		}
		if strings.Join(after, " ") != "429 429 429 429 429" {
			t.Errorf("%s; want 429 x 5: the refunds of requests reserved before the reset came off the new count", seq)
		} else {
			t.Log(seq)
		}
	}
	t.Run("countStatus/key deleted in redis", func(t *testing.T) {
		countStatus(t, a.URL("/cs/x"), "127.0.3.1", a.URL("/cs/x"))
	})
	t.Run("countStatus/key deleted in redis, slow requests on instance a, the rest on b", func(t *testing.T) {
		countStatus(t, a.URL("/cs/x"), "127.0.3.2", b.URL("/cs/x"))
	})
}
