package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPluginCountStatus runs countStatus interpreted, given as a label
// (one comma-separated string): only the 401s count, the 6th failed
// login is rejected without reaching the backend, and the 200s, the
// statuses outside the list and the rejections never count.
func TestPluginCountStatus(t *testing.T) {
	b, _ := loadPlugin(t)
	cfg, err := b.createConfig(map[string]any{"window": "15m", "limit": "5", "countStatus": "401,500-599"})
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		code, _ := strconv.Atoi(r.Header.Get("X-Status"))
		w.WriteHeader(code)
	})
	h, err := b.newChecked(next, cfg, "login@docker")
	if err != nil {
		t.Fatal(err)
	}
	login := func(status int) int {
		r := httptest.NewRequest(http.MethodPost, "http://example.com/login", nil)
		r.RemoteAddr = "203.0.113.7:1"
		r.Header.Set("X-Status", strconv.Itoa(status))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i, s := range []int{200, 200, 404, 401, 200, 503, 401, 401, 401} {
		if got := login(s); got != s {
			t.Fatalf("request %d (a %d): %d", i, s, got)
		}
	}
	before := hits
	for i := 0; i < 3; i++ {
		if got := login(200); got != http.StatusTooManyRequests {
			t.Fatalf("after 5 counted responses: %d, want 429", got)
		}
	}
	if hits != before {
		t.Fatalf("the backend saw %d rejected requests", hits-before)
	}
}

// TestPluginCountStatusHolds runs the reservation interpreted: a backend
// that answers 200 and then aborts (http.ErrAbortHandler, as Traefik's
// proxy does when the client leaves mid-body) keeps each attempt counted,
// and 50 attempts in flight at once reach the backend 5 times.
func TestPluginCountStatusHolds(t *testing.T) {
	b, _ := loadPlugin(t)
	cfg, err := b.createConfig(map[string]any{"window": "15m", "limit": "5", "countStatus": "401"})
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	release := make(chan struct{})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("X-Abort") != "" {
			w.WriteHeader(http.StatusOK)
			panic(http.ErrAbortHandler)
		}
		select {
		case <-release:
		case <-time.After(time.Second):
		}
		w.WriteHeader(http.StatusUnauthorized)
	})
	h, err := b.newChecked(next, cfg, "login-holds@docker")
	if err != nil {
		t.Fatal(err)
	}
	send := func(ip string, abort bool) (code int) {
		r := httptest.NewRequest(http.MethodPost, "http://example.com/login", nil)
		r.RemoteAddr = ip + ":1"
		if abort {
			r.Header.Set("X-Abort", "1")
		}
		w := httptest.NewRecorder()
		defer func() {
			if recover() != nil {
				code = 0
			}
		}()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i := 0; i < 8; i++ {
		send("203.0.113.7", true)
	}
	if n := hits.Load(); n != 5 {
		t.Fatalf("aborted attempts: the backend saw %d, want 5", n)
	}
	hits.Store(0)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send("203.0.113.8", false)
		}()
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := hits.Load(); n != 5 {
		t.Fatalf("50 attempts in flight: the backend saw %d, want 5", n)
	}
}

// TestPluginCountStatusStreams runs countStatus interpreted in front of a
// streamed response, as Traefik's proxy streams server-sent events: the
// backend writes an event and flushes through http.ResponseController,
// and the client must read it while the backend still holds the response
// open. Under yaegi the recorder the backend writes to has no Flush (see
// statusRecorder.Write): without a flush of its own the event would wait
// for the end of the response.
func TestPluginCountStatusStreams(t *testing.T) {
	b, _ := loadPlugin(t)
	cfg, err := b.createConfig(map[string]any{"window": "1m", "limit": "100", "countStatus": "401"})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("data: 1\n\n"))
		http.NewResponseController(w).Flush() // fails under yaegi: no Flush reachable
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		w.Write([]byte("data: 2\n\n"))
	})
	h, err := b.newChecked(next, cfg, "events@file")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer close(release)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := resp.Body.Read(buf)
		got <- string(buf[:n])
	}()
	select {
	case s := <-got:
		if s != "data: 1\n\n" {
			t.Fatalf("first read %q, want the first event", s)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the first event did not reach the client while the response was open: the recorder holds it back")
	}
}

// TestPluginCountStatusHijacks runs countStatus interpreted in front of a
// backend that takes the connection over through http.ResponseController,
// as Traefik's proxy does for a WebSocket upgrade: the hijack reaches the
// server's connection, and the raw answer reaches the client.
func TestPluginCountStatusHijacks(t *testing.T) {
	b, _ := loadPlugin(t)
	cfg, err := b.createConfig(map[string]any{"window": "1m", "limit": "100", "countStatus": "401"})
	if err != nil {
		t.Fatal(err)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "hijack: "+err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
	})
	h, err := b.newChecked(next, cfg, "ws@file")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101 from the hijacked connection", resp.StatusCode)
	}
}
