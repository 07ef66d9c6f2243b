package caddymodule

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/guard"
)

// loginConfigs are a login zone, count_status 401 and limit 5, in memory
// and in a throwaway redis-server.
func loginConfigs(t *testing.T) map[string]string {
	zone := `"rate_limits":{"login":{"window":"15m","limit":5,"count_status":[401]}}`
	return map[string]string{
		"memory": `{` + zone + `}`,
		"redis":  `{"redis":{"address":"` + redistest.Start(t).Addr() + `","key_prefix":"atk:"},` + zone + `}`,
	}
}

// attempt sends one login of client ip through h to next with ctx as the
// request's context, and returns the status the handler gave (its error's,
// if it returned one) and whether it panicked.
func attempt(ctx context.Context, h *Handler, ip string, next caddyhttp.HandlerFunc) (status int, panicked bool) {
	r := httptest.NewRequest(http.MethodPost, "http://example.com/login", nil)
	vars := map[string]any{caddyhttp.ClientIPVarKey: ip}
	*r = *r.WithContext(context.WithValue(ctx, caddyhttp.VarsCtxKey, vars))
	caddyhttp.NewTestReplacer(r)
	w := hijackable{httptest.NewRecorder()}
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	if err := h.ServeHTTP(w, r, next); err != nil {
		if he, ok := err.(caddyhttp.HandlerError); ok {
			return he.StatusCode, false
		}
		return http.StatusInternalServerError, false
	}
	return w.Code, false
}

// TestCountStatusHoldsAgainstTheClient: every way a client can end a
// login attempt before its answer is settled keeps the attempt counted,
// even when the backend would have answered 200: a reset (the proxy
// panics with http.ErrAbortHandler), a client gone (its context ended:
// TCP reset, HTTP/2 RST_STREAM, giving up on a tarpit), Caddy's 499, a
// timeout, an error without status, a hijack without status. Five of
// them use up the limit of 5, and the sixth never reaches the backend.
func TestCountStatusHoldsAgainstTheClient(t *testing.T) {
	// Each backend gets leave, which ends the request's context as a
	// client that goes away does.
	attacks := []struct {
		name string
		next func(w http.ResponseWriter, leave func()) error
	}{
		{"abort after 200", func(w http.ResponseWriter, _ func()) error {
			w.WriteHeader(http.StatusOK)
			panic(http.ErrAbortHandler)
		}},
		{"client gone, 200 written", func(w http.ResponseWriter, leave func()) error {
			w.WriteHeader(http.StatusOK)
			leave()
			return nil
		}},
		{"client gone, nothing written", func(_ http.ResponseWriter, leave func()) error {
			leave()
			return context.Canceled
		}},
		{"499", func(http.ResponseWriter, func()) error {
			return caddyhttp.Error(499, context.Canceled)
		}},
		{"504", func(http.ResponseWriter, func()) error {
			return caddyhttp.Error(http.StatusGatewayTimeout, context.DeadlineExceeded)
		}},
		{"408 written", func(w http.ResponseWriter, _ func()) error {
			w.WriteHeader(http.StatusRequestTimeout)
			return nil
		}},
		{"error without status", func(http.ResponseWriter, func()) error {
			return context.DeadlineExceeded
		}},
		{"hijack without status", func(w http.ResponseWriter, _ func()) error {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return nil
		}},
	}
	for store, config := range loginConfigs(t) {
		for n, a := range attacks {
			ip := "203.0.113." + strconv.Itoa(100+n) // a key of its own in the shared Redis
			t.Run(store+"/"+a.name, func(t *testing.T) {
				h, _ := newHandler(t, config)
				var reached atomic.Int64
				for i := 0; i < 8; i++ {
					ctx, leave := context.WithCancel(context.Background())
					attempt(ctx, h, ip, func(w http.ResponseWriter, _ *http.Request) error {
						reached.Add(1)
						return a.next(w, leave)
					})
					leave()
				}
				if n := reached.Load(); n != 5 {
					t.Fatalf("the backend saw %d attempts, want 5", n)
				}
				s, _, next := login(t, h, ip, http.StatusOK)
				if s != 429 || next {
					t.Fatalf("a login after them: %d (backend reached: %v), want 429", s, next)
				}
				t.Logf("the backend saw 5 attempts (limit 5); the next login: %d", s)
			})
		}
	}
}

// TestCountStatusClientGoneBeforeDecision: with Redis, a client that
// left while its request was being decided is not passed on, whatever
// on_store_error says: nobody waits for the answer, and its call to Redis
// was cut short, so it was not counted.
func TestCountStatusClientGoneBeforeDecision(t *testing.T) {
	h, _ := newHandler(t, loginConfigs(t)["redis"])
	ctx, leave := context.WithCancel(context.Background())
	leave()
	for i := 0; i < 8; i++ {
		s, _ := attempt(ctx, h, "203.0.113.99", func(http.ResponseWriter, *http.Request) error {
			t.Fatal("the backend was reached")
			return nil
		})
		if s != http.StatusTooManyRequests {
			t.Fatalf("attempt %d: %d, want 429", i, s)
		}
	}
	if st := h.store.(*guard.Guard).Stats(); st.Failures != 0 || st.Open {
		t.Fatalf("guard %+v: a client that left is no failure of the store", st)
	}
}

// TestCountStatusRefundsSettled: a response whose status is settled and
// not counted gives its reservation back: 12 successful logins, then 7
// failed ones, give 12 x 200, 5 x 401 and 2 x 429. So does an error with
// a status count_status does not list, answered by handle_errors.
func TestCountStatusRefundsSettled(t *testing.T) {
	for store, config := range loginConfigs(t) {
		t.Run(store, func(t *testing.T) {
			h, _ := newHandler(t, config)
			var got []int
			for i := 0; i < 19; i++ {
				status := http.StatusOK
				if i >= 12 {
					status = http.StatusUnauthorized
				}
				s, _, _ := login(t, h, "203.0.113.10", status)
				got = append(got, s)
			}
			want := slices.Concat(slices.Repeat([]int{200}, 12), slices.Repeat([]int{401}, 5), []int{429, 429})
			if !slices.Equal(got, want) {
				t.Fatalf("statuses %v, want %v", got, want)
			}
			notFound := func(http.ResponseWriter, *http.Request) error { return caddyhttp.Error(http.StatusNotFound, nil) }
			for i := 0; i < 8; i++ {
				if s, _ := attempt(context.Background(), h, "203.0.113.11", notFound); s != http.StatusNotFound {
					t.Fatalf("404 %d: got %d, want every 404 refunded", i, s)
				}
			}
		})
	}
}

// TestCountStatusConcurrent: 200 attempts at once, each held by the
// backend until all have arrived or a second has passed, reach the
// backend 5 times: the reservation is taken before the request goes on.
func TestCountStatusConcurrent(t *testing.T) {
	for store, config := range loginConfigs(t) {
		t.Run(store, func(t *testing.T) {
			h, _ := newHandler(t, config)
			const n = 200
			var reached atomic.Int64
			release := make(chan struct{})
			next := func(w http.ResponseWriter, _ *http.Request) error {
				reached.Add(1)
				select {
				case <-release:
				case <-time.After(time.Second):
				}
				w.WriteHeader(http.StatusUnauthorized)
				return nil
			}
			var wg sync.WaitGroup
			statuses := make([]int, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i], _ = attempt(context.Background(), h, "203.0.113.12", next)
				}()
			}
			time.Sleep(200 * time.Millisecond)
			close(release)
			wg.Wait()
			if got := reached.Load(); got != 5 {
				t.Fatalf("%d of %d concurrent attempts reached the backend, want 5", got, n)
			}
			if c := countOf(statuses, http.StatusTooManyRequests); c != n-5 {
				t.Fatalf("%d rejected, want %d", c, n-5)
			}
			t.Logf("%d concurrent attempts: the backend saw %d (limit 5), %d x 429", n, reached.Load(), n-5)
		})
	}
}

func countOf(s []int, v int) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// TestCountStatusRefundOnlyItsZone: a settled 200 gives back the login
// zone's reservation and nothing of a plain zone the same request took.
func TestCountStatusRefundOnlyItsZone(t *testing.T) {
	h, _ := newHandler(t, `{"rate_limits":{
		"login":{"window":"1m","limit":2,"count_status":[401]},
		"all":{"window":"1m","limit":4}}}`)
	var got []int
	for _, status := range []int{200, 200, 200, 200, 200} {
		s, _, _ := login(t, h, "203.0.113.13", status)
		got = append(got, s)
	}
	if want := []int{200, 200, 200, 200, 429}; !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v: the plain zone counts every request", got, want)
	}
}

// hijackable is a recorder whose connection can be taken over, as a
// server's can.
type hijackable struct{ *httptest.ResponseRecorder }

func (hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, _ := net.Pipe()
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// TestCountStatusRefundAcrossReload: a request admitted before a reload
// and answered after it gives its count back to the zone the new config
// keeps, in memory and in Redis: the old handler, cleaned up meanwhile,
// still refunds.
func TestCountStatusRefundAcrossReload(t *testing.T) {
	for store, config := range loginConfigs(t) {
		t.Run(store, func(t *testing.T) {
			old := provisionRaw(t, config)
			ip := "203.0.113.40"
			arrived, release, done := make(chan struct{}), make(chan struct{}), make(chan int)
			go func() {
				s, _ := attempt(context.Background(), old, ip, func(w http.ResponseWriter, _ *http.Request) error {
					close(arrived)
					<-release
					w.WriteHeader(http.StatusOK)
					return nil
				})
				done <- s
			}()
			<-arrived
			for i := 0; i < 4; i++ {
				if s, _, _ := login(t, old, ip, http.StatusUnauthorized); s != http.StatusUnauthorized {
					t.Fatalf("failed login %d: %d", i, s)
				}
			}
			cur := provisionRaw(t, config)
			defer cleanupHandler(t, cur)
			cleanupHandler(t, old)
			if s, _, reached := login(t, cur, ip, http.StatusUnauthorized); s != 429 || reached {
				t.Fatalf("after the reload, 4 failures and 1 in flight: %d (backend reached: %v), want 429", s, reached)
			}
			close(release)
			if s := <-done; s != http.StatusOK {
				t.Fatalf("the request in flight: %d", s)
			}
			if s, _, _ := login(t, cur, ip, http.StatusUnauthorized); s != http.StatusUnauthorized {
				t.Fatalf("after the refund: %d, want the 5th failure let through", s)
			}
			if s, _, reached := login(t, cur, ip, http.StatusUnauthorized); s != 429 || reached {
				t.Fatalf("after 5 failures: %d (backend reached: %v), want 429", s, reached)
			}
		})
	}
}
