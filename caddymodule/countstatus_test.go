package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// login sends one request through h to a backend that answers status,
// and returns what the client got and whether the backend ran.
func login(t *testing.T, h *Handler, clientIP string, status int) (int, http.Header, bool) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "http://example.com/login", nil)
	vars := map[string]any{caddyhttp.ClientIPVarKey: clientIP}
	*r = *r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
	caddyhttp.NewTestReplacer(r)
	w := httptest.NewRecorder()
	reached := false
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) error {
		reached = true
		w.WriteHeader(status)
		return nil
	})
	if err := h.ServeHTTP(w, r, next); err != nil {
		if he, ok := err.(caddyhttp.HandlerError); ok {
			return he.StatusCode, w.Header(), reached
		}
		t.Fatal(err)
	}
	return w.Code, w.Header(), reached
}

// testCountStatus: with count_status 401 and limit 5, 200s never count,
// the 401s do, and the 6th failed login is rejected without reaching the
// backend; that 429 does not count either.
func testCountStatus(t *testing.T, config string) {
	h, _ := newHandler(t, config)
	ip := "203.0.113.7"
	for i := 0; i < 10; i++ {
		if got, _, reached := login(t, h, ip, http.StatusOK); got != 200 || !reached {
			t.Fatalf("successful login %d: %d (backend reached: %v)", i, got, reached)
		}
	}
	for i := 0; i < 5; i++ {
		got, hdr, reached := login(t, h, ip, http.StatusUnauthorized)
		if got != 401 || !reached {
			t.Fatalf("failed login %d: %d (backend reached: %v)", i, got, reached)
		}
		if rem := hdr.Get("X-RateLimit-Remaining"); rem != strconv.Itoa(4-i) {
			t.Fatalf("failed login %d: X-RateLimit-Remaining %q, want %d (the budget this check saw)", i, rem, 4-i)
		}
	}
	for i := 0; i < 3; i++ {
		got, hdr, reached := login(t, h, ip, http.StatusOK)
		if got != 429 || reached || hdr.Get("Retry-After") == "" {
			t.Fatalf("login after 5 failures: %d, backend reached %v, Retry-After %q: want 429 without the backend", got, reached, hdr.Get("Retry-After"))
		}
	}
	// Another client is untouched: our 429s counted nothing for it, nor
	// its 200s for the first.
	if got, _, _ := login(t, h, "203.0.113.8", http.StatusUnauthorized); got != 401 {
		t.Fatalf("another client: %d", got)
	}
}

func TestCountStatusMemory(t *testing.T) {
	testCountStatus(t, `{"rate_limits":{"login":{"window":"15m","limit":5,"count_status":[401]}}}`)
}

func TestCountStatusRedis(t *testing.T) {
	srv := redistest.Start(t)
	testCountStatus(t, `{"redis":{"address":"`+srv.Addr()+`","key_prefix":"cs:"},"rate_limits":{"login":{"window":"15m","limit":5,"count_status":[401]}}}`)
}

// TestCountStatusClassAndMix: a class counts each of its codes, and a
// zone without count_status still counts every request of the same
// handler at the check.
func TestCountStatusClassAndMix(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{
		"errors":{"window":"1m","limit":3,"count_status":[5, 403]},
		"all":{"window":"1m","limit":5}}}`)
	var got []int
	for _, status := range []int{200, 502, 404, 503, 200} {
		s, _, _ := login(t, h, "203.0.113.7", status)
		got = append(got, s)
	}
	// 502 and 503 used 2 of errors' 3; the 6th request overflows "all".
	s, _, reached := login(t, h, "203.0.113.7", 200)
	got = append(got, s)
	if want := []int{200, 502, 404, 503, 200, 429}; !slices.Equal(got, want) || reached {
		t.Fatalf("statuses %v (last reached backend: %v), want %v", got, reached, want)
	}
	h2, _ := newHandler(t, `{"rate_limits":{"errors":{"window":"1m","limit":2,"count_status":[5, 403]}}}`)
	for _, status := range []int{403, 599} {
		login(t, h2, "198.51.100.1", status)
	}
	if s, _, reached := login(t, h2, "198.51.100.1", 200); s != 429 || reached {
		t.Fatalf("after a 403 and a 599: %d (backend reached: %v), want 429", s, reached)
	}
}

// TestCountStatusErrorResponse: a handler that returns an error, for
// handle_errors to answer, is counted by the error's status.
func TestCountStatusErrorResponse(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{"login":{"window":"1m","limit":1,"count_status":[4]}}}`)
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	vars := map[string]any{caddyhttp.ClientIPVarKey: "203.0.113.7"}
	*r = *r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
	caddyhttp.NewTestReplacer(r)
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		return caddyhttp.Error(http.StatusNotFound, nil)
	})
	if err := h.ServeHTTP(httptest.NewRecorder(), r, next); err == nil {
		t.Fatal("the error was swallowed")
	}
	if s, _, reached := login(t, h, "203.0.113.7", 200); s != 429 || reached {
		t.Fatalf("after a 404 error: %d, want 429", s)
	}
}

func TestCountStatusBadValues(t *testing.T) {
	for config, want := range map[string]string{
		`{"rate_limits":{"a":{"window":"1m","limit":1,"count_status":[]}}}`:    "count_status: no status code",
		`{"rate_limits":{"a":{"window":"1m","limit":1,"count_status":[600]}}}`: "neither a status code",
		`{"rate_limits":{"a":{"window":"1m","limit":1,"count_status":[6]}}}`:   "neither a status code",
		`{"rate_limits":{"a":{"window":"1m","limit":1,"count_status":[99]}}}`:  "neither a status code",
	} {
		expectProvisionError(t, config, want)
	}
	for input, want := range map[string]string{
		"rate_limit {\n zone a {\n window 1m\n limit 1\n count_status\n }\n}":     "wrong argument count",
		"rate_limit {\n zone a {\n window 1m\n limit 1\n count_status 6xx\n }\n}": "neither a status code",
		"rate_limit {\n zone a {\n window 1m\n limit 1\n count_status 4x\n }\n}":  "neither a status code",
		"rate_limit {\n zone a {\n window 1m\n limit 1\n count_status 600\n }\n}": "neither a status code",
	} {
		h := new(Handler)
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", input, err, want)
		}
	}
}

func TestCountStatusCaddyfile(t *testing.T) {
	h := new(Handler)
	in := "rate_limit {\n zone login {\n window 15m\n limit 5\n count_status 401 403 5xx\n }\n}"
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
		t.Fatal(err)
	}
	if got := h.RateLimits["login"].CountStatus; !slices.Equal(got, []int{401, 403, 5}) {
		t.Fatalf("count_status %v, want [401 403 5]", got)
	}
}

// The recorder keeps the first final status: an informational response
// before it, or a superfluous WriteHeader after it, changes nothing.
func TestStatusRecorderKeepsFinalStatus(t *testing.T) {
	tests := []struct {
		codes []int
		want  int
	}{
		{[]int{http.StatusOK, http.StatusSwitchingProtocols}, http.StatusOK},
		{[]int{http.StatusEarlyHints, http.StatusUnauthorized}, http.StatusUnauthorized},
		{[]int{http.StatusSwitchingProtocols, http.StatusOK}, http.StatusSwitchingProtocols},
		{[]int{http.StatusUnauthorized, http.StatusOK}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		rec := &statusRecorder{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: httptest.NewRecorder()}}
		for _, code := range tt.codes {
			rec.WriteHeader(code)
		}
		if rec.status.Code() != tt.want {
			t.Errorf("WriteHeader %v: status %d, want %d", tt.codes, rec.status.Code(), tt.want)
		}
	}
}
