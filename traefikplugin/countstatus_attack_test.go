package traefikplugin

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

	"github.com/windowlimit/windowlimit/internal/redistest"
)

// loginMiddlewares builds, for each store, a login middleware of limit 5
// counting the 401s in front of next.
func loginMiddlewares(t *testing.T, name string, next http.Handler) map[string]http.Handler {
	mem := CreateConfig()
	mem.Window, mem.Limit, mem.CountStatus = "15m", 5, []string{"401"}
	red := redisConfig(redistest.Start(t).Addr(), 5)
	red.Window, red.CountStatus = "15m", []string{"401"}
	return map[string]http.Handler{
		"memory": countStatusMiddleware(t, mem, name+"@file", next),
		"redis":  countStatusMiddleware(t, red, name+"-redis@file", next),
	}
}

// attempt sends one login from ip through h with ctx as the request's
// context, and returns the status the client got; a panic (which net/http
// would turn into a reset connection) is recovered.
func attempt(ctx context.Context, h http.Handler, ip string) (status int) {
	r := httptest.NewRequest(http.MethodPost, "http://example.com/login", nil).WithContext(ctx)
	r.RemoteAddr = ip + ":4711"
	w := hijackable{httptest.NewRecorder()}
	defer func() {
		if recover() != nil {
			status = 0
		}
	}()
	h.ServeHTTP(w, r)
	return w.Code
}

// TestCountStatusHoldsAgainstTheClient: every way a client can end a
// login attempt before its answer is settled keeps the attempt counted,
// even when the backend answers 200: the proxy's http.ErrAbortHandler (a
// client gone mid-body), a client gone (its context ended), Traefik's 499,
// a timeout (504, 408), a hijack without status. Five of them use up the
// limit of 5, and the sixth never reaches the backend.
func TestCountStatusHoldsAgainstTheClient(t *testing.T) {
	attacks := []struct {
		name string
		next func(w http.ResponseWriter, leave func())
	}{
		{"abort after 200", func(w http.ResponseWriter, _ func()) {
			w.WriteHeader(http.StatusOK)
			panic(http.ErrAbortHandler)
		}},
		{"client gone, 200 written", func(w http.ResponseWriter, leave func()) {
			w.WriteHeader(http.StatusOK)
			leave()
		}},
		{"client gone, nothing written", func(_ http.ResponseWriter, leave func()) { leave() }},
		{"499", func(w http.ResponseWriter, _ func()) { w.WriteHeader(499) }},
		{"504", func(w http.ResponseWriter, _ func()) { w.WriteHeader(http.StatusGatewayTimeout) }},
		{"408", func(w http.ResponseWriter, _ func()) { w.WriteHeader(http.StatusRequestTimeout) }},
		{"hijack without status", func(w http.ResponseWriter, _ func()) {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
		}},
	}
	for n, a := range attacks {
		var reached atomic.Int64
		var leave context.CancelFunc
		next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			reached.Add(1)
			a.next(w, leave)
		})
		for store, h := range loginMiddlewares(t, "attack"+strconv.Itoa(n), next) {
			t.Run(store+"/"+a.name, func(t *testing.T) {
				reached.Store(0)
				for i := 0; i < 8; i++ {
					var ctx context.Context
					ctx, leave = context.WithCancel(context.Background())
					attempt(ctx, h, "203.0.113.9")
					leave()
				}
				if got := reached.Load(); got != 5 {
					t.Fatalf("the backend saw %d attempts, want 5", got)
				}
				s := attempt(context.Background(), h, "203.0.113.9")
				if s != http.StatusTooManyRequests || reached.Load() != 5 {
					t.Fatalf("a login after them: %d, backend attempts %d: want 429 without the backend", s, reached.Load())
				}
				t.Logf("8 attempts: the backend saw 5 (limit 5); a ninth: %d", s)
			})
		}
	}
}

// TestCountStatusRefundsSettled: 12 successful logins, then 7 failed ones,
// give 12 x 200, 5 x 401 and 2 x 429: a settled status that is not listed
// gives its reservation back.
func TestCountStatusRefundsSettled(t *testing.T) {
	for store, h := range loginMiddlewares(t, "sequence", new(statusBackend)) {
		t.Run(store, func(t *testing.T) {
			var got []int
			for i := 0; i < 19; i++ {
				status := http.StatusOK
				if i >= 12 {
					status = http.StatusUnauthorized
				}
				got = append(got, loginAs(h, status).Code)
			}
			want := slices.Concat(slices.Repeat([]int{200}, 12), slices.Repeat([]int{401}, 5), []int{429, 429})
			if !slices.Equal(got, want) {
				t.Fatalf("statuses %v, want %v", got, want)
			}
		})
	}
}

// TestCountStatusConcurrent: 200 attempts at once, each held by the
// backend until all have arrived or a second has passed, reach the
// backend 5 times: the reservation is taken before the request goes on.
func TestCountStatusConcurrent(t *testing.T) {
	var reached atomic.Int64
	var release chan struct{}
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		select {
		case <-release:
		case <-time.After(time.Second):
		}
		w.WriteHeader(http.StatusUnauthorized)
	})
	for store, h := range loginMiddlewares(t, "concurrent", next) {
		t.Run(store, func(t *testing.T) {
			reached.Store(0)
			release = make(chan struct{})
			const n = 200
			statuses := make([]int, n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i] = attempt(context.Background(), h, "203.0.113.12")
				}()
			}
			time.Sleep(200 * time.Millisecond)
			close(release)
			wg.Wait()
			if got := reached.Load(); got != 5 {
				t.Fatalf("%d of %d concurrent attempts reached the backend, want 5", got, n)
			}
			t.Logf("%d concurrent attempts: the backend saw %d (limit 5)", n, reached.Load())
			rejected := 0
			for _, s := range statuses {
				if s == http.StatusTooManyRequests {
					rejected++
				}
			}
			if rejected != n-5 {
				t.Fatalf("%d rejected, want %d", rejected, n-5)
			}
		})
	}
}

// hijackable is a recorder whose connection can be taken over, as a
// server's can.
type hijackable struct{ *httptest.ResponseRecorder }

func (hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, _ := net.Pipe()
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}
