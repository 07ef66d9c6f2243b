package e2etest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ChaosLoad kills Redis under load: it sends 300 GETs of load, 8 at a
// time, each with an X-Key of its own (so none is over the limit), and
// calls kill after the 50th answer. Every request must be answered 200,
// some counted in Redis (X-RateLimit-Reset above 0) and some by the allow
// policy (Reset 0); deny, a zone whose policy is deny, answers 200 before
// and 429 with Retry-After: 1 after. It returns how many the policy
// answered.
func ChaosLoad(tb testing.TB, load, deny string, kill func()) (policy int) {
	tb.Helper()
	if req, resp := Get(tb, deny, "X-Key", "deny-up"); resp.Status != 200 {
		tb.Fatalf("redis up: %v: %v, want 200", req, resp)
	}
	type answer struct{ status, reset string }
	answers := make(chan answer, 300)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				resp, err := Send(Request{URL: load, Header: []string{"X-Key", "load-" + strconv.Itoa(i)}})
				if err != nil {
					answers <- answer{"error", ""}
					continue
				}
				answers <- answer{strconv.Itoa(resp.Status), resp.Header.Get("X-RateLimit-Reset")}
			}
		}()
	}
	go func() {
		for i := 1; i <= 300; i++ {
			next <- i
		}
		close(next)
	}()
	var got []answer
	for len(got) < 50 {
		got = append(got, <-answers)
	}
	atKill := len(got)
	kill()
	wg.Wait()
	close(answers)
	for ans := range answers {
		got = append(got, ans)
	}
	ok, fives, counted := 0, 0, 0
	var statuses []string
	for _, ans := range got {
		statuses = append(statuses, ans.status)
		switch {
		case ans.status == "200" && ans.reset == "0":
			policy++
			ok++
		case ans.status == "200":
			counted++
			ok++
		case strings.HasPrefix(ans.status, "5"):
			fives++
		}
	}
	summary := fmt.Sprintf("300 GETs of %s, 8 at a time, each its own X-Key, redis killed after %d answers: %s (%d counted in redis, %d answered by the allow policy)",
		load, atKill, Tally(statuses), counted, policy)
	if len(got) != 300 || fives != 0 || ok != 300 {
		tb.Fatalf("%s; want 300 x 200, no 5xx", summary)
	}
	if counted == 0 || policy == 0 {
		tb.Fatalf("%s; want some of each: the kill did not land during the load", summary)
	}
	req, resp := Get(tb, deny, "X-Key", "deny-down")
	if resp.Status != 429 || resp.Header.Get("Retry-After") != "1" {
		tb.Fatalf("redis down: %v: %v, want 429 with Retry-After 1", req, resp)
	}
	tb.Log(summary)
	return policy
}

// SharedAgain restarts Redis with restart, then polls until instances a
// and b count one limit again, and fails tb unless that took at most 1 s:
// each poll sends a fresh X-Key to urlA, then to urlB (one zone of limit
// 20 on the two instances), and urlB answers Remaining 18 only when both
// were counted in one store, which can only be Redis (the allow policy
// answers Remaining 19, Reset 0). It returns, from the restart's start,
// when that happened, when restart returned, and when a and b first
// answered a Reset above 0.
func SharedAgain(tb testing.TB, restart func(), urlA, urlB string) (rec, up, atA, atB time.Duration) {
	tb.Helper()
	t0 := time.Now()
	restart()
	up = time.Since(t0)
	var log []string
	first := regexp.MustCompile(`^[1-9]`)
	for poll := 1; ; poll++ {
		key := "recover-" + strconv.Itoa(poll)
		_, ra := Get(tb, urlA, "X-Key", key)
		if atA == 0 && first.MatchString(ra.Header.Get("X-RateLimit-Reset")) {
			atA = time.Since(t0)
		}
		_, rb := Get(tb, urlB, "X-Key", key)
		if atB == 0 && first.MatchString(rb.Header.Get("X-RateLimit-Reset")) {
			atB = time.Since(t0)
		}
		log = append(log, fmt.Sprintf("%.2f s: poll %d (X-Key %s): a %v; b %v", time.Since(t0).Seconds(), poll, key, ra, rb))
		if ra.Status != 200 || rb.Status != 200 {
			tb.Fatalf("recovery poll %d: want 200 from both:\n%s", poll, strings.Join(log, "\n"))
		}
		if rb.Header.Get("X-RateLimit-Remaining") == "18" {
			break
		}
		if time.Since(t0) > 5*time.Second {
			tb.Fatalf("the two instances did not share a count within 5 s of the restart:\n%s", strings.Join(log, "\n"))
		}
	}
	rec = time.Since(t0)
	if rec > time.Second {
		tb.Fatalf("the shared limit came back %.2f s after the restart, want <= 1 s:\n%s", rec.Seconds(), strings.Join(log, "\n"))
	}
	return rec, up, atA, atB
}

// AdmitsAgain waits at most 2 s for deny, a zone whose policy is deny, to
// answer 200 again once Redis is back, a fresh X-Key each try.
func AdmitsAgain(tb testing.TB, deny string) {
	tb.Helper()
	i := 0
	WaitFor(tb, 2*time.Second, "the deny zone to admit again", func() (bool, string) {
		i++
		req, resp := Get(tb, deny, "X-Key", "deny-after-"+strconv.Itoa(i))
		return resp.Status == 200, fmt.Sprintf("%v: %v", req, resp)
	})
}
