package e2etest

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Condition is one thing a response must show: nil when it does, else
// what it showed instead.
type Condition func(Response) error

// StatusIs holds when the response's status is code.
func StatusIs(code int) Condition {
	return func(r Response) error {
		if r.Status != code {
			return fmt.Errorf("status %d, want %d", r.Status, code)
		}
		return nil
	}
}

// BodyContains holds when the body contains s.
func BodyContains(s string) Condition {
	return func(r Response) error {
		if !strings.Contains(r.Body, s) {
			return fmt.Errorf("body %q does not contain %q", r.Body, s)
		}
		return nil
	}
}

// HeaderIs holds when the response's header name is value ("" for none).
func HeaderIs(name, value string) Condition {
	return func(r Response) error {
		if got := r.Header.Get(name); got != value {
			return fmt.Errorf("%s %q, want %q", name, got, value)
		}
		return nil
	}
}

// pollEvery is how often the waits try again.
const pollEvery = 20 * time.Millisecond

// Try polls r until every condition holds of its response, or fails
// once timeout has passed, with the condition that failed last (or the
// transport's error) and the last response.
func Try(r Request, timeout time.Duration, conds ...Condition) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := Send(r)
		if err == nil {
			for _, c := range conds {
				if err = c(resp); err != nil {
					err = fmt.Errorf("%w; last response %v", err, resp)
					break
				}
			}
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%v: waited %v: %w", r, timeout, err)
		}
		time.Sleep(pollEvery)
	}
}

// GetRequest is Try of a GET of url.
func GetRequest(url string, timeout time.Duration, conds ...Condition) error {
	return Try(Request{Method: http.MethodGet, URL: url, Timeout: time.Second}, timeout, conds...)
}

// Until polls cond until it holds, or returns an error after timeout
// saying what was awaited and cond's last word on why not.
func Until(timeout time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if why == "" {
				why = "never held"
			}
			return errors.New("waited " + timeout.String() + " for " + what + ": " + why)
		}
		time.Sleep(pollEvery)
	}
}

// WaitFor is Until that fails tb.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	if err := Until(timeout, what, cond); err != nil {
		tb.Fatal(err)
	}
}
