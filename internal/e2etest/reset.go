package e2etest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// BurstResult is what scripts/e2e/burst counted.
type BurstResult struct {
	OK, Total, Errors int
	Tally             string // "STATUS x N, ..." as burst printed them
}

// Burst sends n requests to urls in turn, c at a time, all ended by
// deadline, through scripts/e2e/burst.
func Burst(tb testing.TB, n, c int, deadline time.Duration, urls ...string) BurstResult {
	tb.Helper()
	args := []string{"-urls", strings.Join(urls, ","), "-n", strconv.Itoa(n), "-c", strconv.Itoa(c), "-deadline", deadline.String()}
	lines, stderr := Run(tb, Program(tb, "burst"), deadline+10*time.Second, args...)
	if stderr != "" {
		tb.Fatalf("burst %s: %s", strings.Join(args, " "), stderr)
	}
	var r BurstResult
	var parts []string
	for _, l := range lines {
		status, count, _ := strings.Cut(l, " ")
		k, _ := strconv.Atoi(count)
		r.Total += k
		switch status {
		case "200":
			r.OK = k
		case "error":
			r.Errors = k
		}
		parts = append(parts, status+" x "+count)
	}
	r.Tally = strings.Join(parts, ", ")
	return r
}

// SubWindowStart waits, at most one sub-window, until the current
// sub-window of length sub (on this machine's clock, which the
// redis-server shares) started less than half a second ago.
func SubWindowStart(tb testing.TB, sub time.Duration) {
	tb.Helper()
	WaitFor(tb, sub+time.Second, "the start of a sub-window", func() (bool, string) {
		since := time.Duration(time.Now().UnixNano() % int64(sub))
		return since < 500*time.Millisecond, since.String() + " into the sub-window"
	})
}

// SendFrom sends a GET of url from the address from with X-Status: status
// and returns the response's status and X-RateLimit-Remaining; a
// transport error fails tb (not at once: it may run in a goroutine) and
// returns 0.
func SendFrom(tb testing.TB, from, url, status string, timeout time.Duration) (int, string) {
	r := Request{URL: url, From: from, Header: []string{"X-Status", status}, Timeout: timeout}
	resp, err := Send(r)
	if err != nil {
		tb.Errorf("%v: %v", r, err)
		return 0, ""
	}
	return resp.Status, resp.Header.Get("X-RateLimit-Remaining")
}

// A Reset is one run of ResetCountStatus: URL (and URL2, the same zone,
// maybe on another instance) is a zone of limit 5 a minute counting 401s
// in front of the backend.
type Reset struct {
	URL, URL2 string
	From      string        // the client's loopback address
	Sub       time.Duration // the zone's sub-window
	// Counted holds once the zone counts the five slow requests, within
	// CountedWithin.
	Counted       func() (bool, string)
	CountedWithin time.Duration
	Name          string // what Do does, as the failures say it
	Do            func() // resets the key of From
}

// ResetCountStatus checks that a reset is a reset for a zone that counts
// 401s: from r.From, five requests to r.URL that end in 200 after 3 s
// reserve the whole budget; once r.Counted holds, r.Do resets the key;
// five 401s to r.URL2 each get 401 (a fresh budget, Remaining 4..0); the
// slow five end in 200; and five more 401s to r.URL2 each get 429: the
// slow ones' refunds are of the old generation and give nothing back to the new
// one. It starts early in a sub-window, so that the slow ones and the
// fresh 401s are counted in the same one.
func ResetCountStatus(tb testing.TB, r Reset) {
	tb.Helper()
	SubWindowStart(tb, r.Sub)
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
			s, rem := SendFrom(tb, r.From, r.URL+"?wait=3s", "200", 15*time.Second)
			slow[i] = result{s, rem}
		}()
	}
	// The backend holds the slow ones for 3 s: the reset comes once the
	// zone counts all five, while they are in flight.
	WaitFor(tb, r.CountedWithin, "the five slow requests counted", r.Counted)
	r.Do()
	var fresh, remaining, after []string
	for range 5 {
		s, rem := SendFrom(tb, r.From, r.URL2, "401", 5*time.Second)
		fresh, remaining = append(fresh, strconv.Itoa(s)), append(remaining, rem)
	}
	wg.Wait()
	var slowCodes, slowRem []string
	for _, res := range slow {
		slowCodes, slowRem = append(slowCodes, strconv.Itoa(res.status)), append(slowRem, res.remaining)
	}
	sort.Strings(slowRem)
	for range 5 {
		s, _ := SendFrom(tb, r.From, r.URL2, "401", 5*time.Second)
		after = append(after, strconv.Itoa(s))
	}
	seq := fmt.Sprintf("from %s: slow 200s in flight (%s?wait=3s [X-Status: 200]): %s (Remaining %s at their check); after %s, 5 x 401 (%s [X-Status: 401]): %s (Remaining %s); once the slow ones ended, 5 x 401: %s",
		r.From, r.URL, strings.Join(slowCodes, " "), strings.Join(slowRem, " "), r.Name, r.URL2, strings.Join(fresh, " "), strings.Join(remaining, " "), strings.Join(after, " "))
	if strings.Join(slowCodes, " ") != "200 200 200 200 200" || strings.Join(slowRem, " ") != "0 1 2 3 4" {
		tb.Fatalf("%s; want the slow ones 200 with Remaining 0 1 2 3 4 (all five counted before the reset)", seq)
	}
	if strings.Join(fresh, " ") != "401 401 401 401 401" || strings.Join(remaining, " ") != "4 3 2 1 0" {
		tb.Fatalf("%s; want 401 x 5 with Remaining 4 3 2 1 0 after the reset (a fresh budget)", seq)
	}
	if strings.Join(after, " ") != "429 429 429 429 429" {
		tb.Errorf("%s; want 429 x 5: the refunds of requests reserved before the reset came off the new count", seq)
	} else {
		tb.Log(seq)
	}
}

// WarmUp makes a key hot: early in a sub-window of length sub, it sends
// 600 requests to urls in turn, 8 at a time, and fails tb unless all were
// answered with fewer script calls to rds than requests (leases spared
// some). It returns what came back and the script calls.
func WarmUp(tb testing.TB, rds *redistest.Server, sub time.Duration, urls ...string) (BurstResult, int64) {
	tb.Helper()
	SubWindowStart(tb, sub)
	calls0 := rds.ScriptCalls(tb)
	warm := Burst(tb, 600, 8, 20*time.Second, urls...)
	calls := rds.ScriptCalls(tb) - calls0
	if warm.Total != 600 || warm.Errors != 0 {
		tb.Fatalf("warm-up of 600 GETs of %s in turn, 8 at a time: %s, want 600 responses", strings.Join(urls, " and "), warm.Tally)
	}
	if calls >= 600 {
		tb.Fatalf("warm-up: %d script calls for 600 requests (%s): no lease spared one, the key is not hot", calls, warm.Tally)
	}
	return warm, calls
}

// BurstAfterReset sends n requests to urls in turn, 16 at a time, and
// fails tb unless all were answered within 40 s. It returns what came
// back and how long it took.
func BurstAfterReset(tb testing.TB, n int, urls ...string) (BurstResult, time.Duration) {
	tb.Helper()
	t0 := time.Now()
	r := Burst(tb, n, 16, 40*time.Second, urls...)
	took := time.Since(t0)
	if r.Total != n || r.Errors != 0 {
		tb.Fatalf("the burst after the reset: %s, want %d responses within 40 s", r.Tally, n)
	}
	return r, took
}
