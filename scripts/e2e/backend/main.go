// Command backend is the upstream of the end-to-end tests and benchmarks: a
// tiny HTTP server on loopback that answers every request with 200 "ok", or
// with the status its X-Status header names (200-599), for
// the count_status tests. A query wait=3s answers that late (ended early
// when the proxy gives up): requests still in flight when their key is
// reset (TestE2EReset). Only a request with a query reads it, so
// the benchmarks' requests pay nothing for it.
//
// A path ending in /login, without X-Status, is a login instead, for the
// count_status attack tests and the quickstart: the password open-sesame in
// the X-Password header, as Caddyfile.example's login takes it, is answered
// 200 at once, any other 401. The query may slow the 401 down: wait=500ms
// answers it that late (a tarpit; a slow password hash), and hold=10s
// flushes its status and first line at once (with pad=N, N more bytes of
// body: a page big enough that a proxy which does not pass flushes on
// sends its status too) but holds the rest of the body that long, so that
// a client that leaves after the status leaves while its proxy is still
// copying the body. Both end early when the proxy gives up on the request.
// GET /count?client=IP prints how many login attempts came from that
// client, by the address the proxy put last in X-Forwarded-For.
//
// A path under /arrive/ records the request's arrival time on the
// backend's monotonic clock, under the tag that follows /arrive/ (one tag a
// benchmark run), and answers 200 "ok": what reached the backend is what
// the limit in front of it admitted. GET /arrivals?tag=T&window=1s prints
// "total N max M": the arrivals recorded under T, and the most of them in
// any interval [t, t+window) (exact, not in buckets), for
// scripts/bench-lease.sh.
//
//	go run backend.go -free-ports 3          # print 3 free loopback ports and exit
//	go run backend.go -port-file /tmp/port   # serve on a free port, written to the file
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	portFile := flag.String("port-file", "", "file to write the chosen port to")
	freePorts := flag.Int("free-ports", 0, "print this many free loopback ports and exit")
	flag.Parse()

	if *freePorts > 0 {
		var ls []net.Listener
		for i := 0; i < *freePorts; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				log.Fatal(err)
			}
			ls = append(ls, l)
			fmt.Println(l.Addr().(*net.TCPAddr).Port)
		}
		for _, l := range ls {
			l.Close()
		}
		return
	}

	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *portFile != "" {
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		if err := os.WriteFile(*portFile+".tmp", []byte(port+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(*portFile+".tmp", *portFile); err != nil {
			log.Fatal(err)
		}
	}
	var logins attempts
	var arrived arrivals
	arrived.start = time.Now()
	body := []byte("ok\n")
	log.Fatal(http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/plain"}
		switch {
		case strings.HasSuffix(r.URL.Path, "/login") && r.Header["X-Status"] == nil:
			logins.login(w, r)
			return
		case strings.HasSuffix(r.URL.Path, "/events"):
			// A server-sent event stream: one event, then the response
			// stays open until the client leaves or 10 s pass.
			w.Header()["Content-Type"] = []string{"text/event-stream"}
			w.Write([]byte("data: 1\n\n"))
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		case r.URL.Path == "/count":
			fmt.Fprintln(w, logins.count(r.URL.Query().Get("client")))
			return
		case strings.HasPrefix(r.URL.Path, "/arrive/"):
			arrived.record(strings.TrimPrefix(r.URL.Path, "/arrive/"))
		case r.URL.Path == "/arrivals":
			arrived.report(w, r)
			return
		}
		if r.URL.RawQuery != "" && !pause(r, r.URL.Query().Get("wait")) {
			return
		}
		if v := r.Header["X-Status"]; len(v) == 1 {
			if code, err := strconv.Atoi(v[0]); err == nil && code >= 200 && code <= 599 {
				w.WriteHeader(code)
			}
		}
		w.Write(body)
	})))
}

// attempts counts the login attempts of each client.
type attempts struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *attempts) count(client string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[client]
}

// arrivals keeps the arrival times of each tag, as offsets from start on
// the monotonic clock (time.Since reads it), so that no wall-clock step
// moves them.
type arrivals struct {
	mu    sync.Mutex
	start time.Time
	at    map[string][]time.Duration
}

// record notes an arrival under tag. The time is read under the lock, so
// each tag's offsets are in order.
func (a *arrivals) record(tag string) {
	a.mu.Lock()
	if a.at == nil {
		a.at = make(map[string][]time.Duration)
	}
	a.at[tag] = append(a.at[tag], time.Since(a.start))
	a.mu.Unlock()
}

// report prints "total N max M" for the query's tag and window: M is the
// most arrivals in any interval [t, t+window). Such a maximum is reached by
// an interval that starts at an arrival, so two indexes over the sorted
// offsets find it exactly.
func (a *arrivals) report(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	window, err := time.ParseDuration(q.Get("window"))
	if err != nil || window <= 0 {
		http.Error(w, "want window=DURATION (> 0)", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	at := append([]time.Duration(nil), a.at[q.Get("tag")]...)
	a.mu.Unlock()
	slices.Sort(at)
	most, j := 0, 0
	for i := range at {
		for j < len(at) && at[j]-at[i] < window {
			j++
		}
		most = max(most, j-i)
	}
	fmt.Fprintf(w, "total %d max %d\n", len(at), most)
}

// login answers a login attempt, counted on arrival: what reached the
// backend is what a limit in front of it let through.
func (a *attempts) login(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	if a.n == nil {
		a.n = make(map[string]int)
	}
	a.n[client(r)]++
	a.mu.Unlock()

	if r.Header.Get("X-Password") == "open-sesame" {
		w.Write([]byte("welcome\n"))
		return
	}
	q := r.URL.Query()
	if !pause(r, q.Get("wait")) {
		return
	}
	w.WriteHeader(http.StatusUnauthorized)
	w.Write([]byte("wrong password\n"))
	if n, err := strconv.Atoi(q.Get("pad")); err == nil && n > 0 {
		w.Write(bytes.Repeat([]byte{'.'}, min(n, 1<<20)))
	}
	if q.Get("hold") != "" {
		http.NewResponseController(w).Flush()
		if !pause(r, q.Get("hold")) {
			return
		}
	}
	w.Write([]byte("try again\n"))
}

// pause waits for the duration d (at most 30 s) and reports whether the
// request is still wanted.
func pause(r *http.Request, d string) bool {
	if d == "" {
		return true
	}
	t, err := time.ParseDuration(d)
	if err != nil || t < 0 {
		return true
	}
	timer := time.NewTimer(min(t, 30*time.Second))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// client is the address the proxy put last in X-Forwarded-For, or the
// connection's.
func client(r *http.Request) string {
	if v := r.Header.Values("X-Forwarded-For"); len(v) > 0 {
		last := v[len(v)-1]
		return strings.TrimSpace(last[strings.LastIndexByte(last, ',')+1:])
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	return host
}
