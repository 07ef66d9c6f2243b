package e2etest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGetRequestWaitsUntilEveryConditionHolds: the third answer is the
// first with status 200 and the body; GetRequest returns once it came.
func TestGetRequestWaitsUntilEveryConditionHolds(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("X-Ready", "yes")
		w.Write([]byte("loaded"))
	}))
	defer srv.Close()
	err := GetRequest(srv.URL, 5*time.Second, StatusIs(200), BodyContains("loaded"), HeaderIs("X-Ready", "yes"))
	if err != nil || calls.Load() != 3 {
		t.Fatalf("GetRequest: %v after %d calls, want nil after 3", err, calls.Load())
	}
}

// TestGetRequestNamesTheConditionThatFailedLast: a body that never comes
// is named in the error, with the last response.
func TestGetRequestNamesTheConditionThatFailedLast(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("starting"))
	}))
	defer srv.Close()
	err := GetRequest(srv.URL, 100*time.Millisecond, StatusIs(200), BodyContains("loaded"))
	if err == nil {
		t.Fatal("GetRequest: nil, want an error")
	}
	for _, want := range []string{"GET " + srv.URL, `body "starting" does not contain "loaded"`, "last response 200"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestUntilSaysWhatItAwaited: the error names what was awaited and the
// condition's last word.
func TestUntilSaysWhatItAwaited(t *testing.T) {
	n := 0
	err := Until(50*time.Millisecond, "the snapshot", func() (bool, string) {
		n++
		return false, "no file yet"
	})
	if err == nil || !strings.Contains(err.Error(), "for the snapshot: no file yet") || n < 2 {
		t.Fatalf("Until: %v after %d polls, want an error naming the snapshot and \"no file yet\", after polls", err, n)
	}
}
