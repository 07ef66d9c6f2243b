package e2etest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Request is what a test sends; its String names it in failures.
type Request struct {
	Method string   // GET when empty
	URL    string   // an absolute URL
	Header []string // name, value, name, value, ...
	// From is the loopback address the connection comes from, the
	// client's address as Traefik sees it; 127.0.0.1 when empty.
	From string
	// Timeout bounds the whole exchange; 5 s when zero.
	Timeout time.Duration
}

// String shows the method, the URL, the headers and the source address.
func (r Request) String() string {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	s := method + " " + r.URL
	for i := 0; i+1 < len(r.Header); i += 2 {
		s += fmt.Sprintf(" [%s: %s]", r.Header[i], r.Header[i+1])
	}
	if r.From != "" {
		s += " from " + r.From
	}
	return s
}

// Response is what came back.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// String shows the status, the rate-limit headers and the body.
func (r Response) String() string {
	var h []string
	for _, k := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "RateLimit-Policy", "RateLimit", "Content-Type"} {
		if v := r.Header.Get(k); v != "" {
			h = append(h, k+": "+v)
		}
	}
	body := r.Body
	if len(body) > 300 {
		body = body[:300] + "..."
	}
	return fmt.Sprintf("%d [%s] %q", r.Status, strings.Join(h, ", "), body)
}

// Send sends r on a connection of its own, as curl does, and returns the
// response or the transport's error.
func Send(r Request) (Response, error) {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	req, err := http.NewRequest(method, r.URL, nil)
	if err != nil {
		return Response{}, err
	}
	for i := 0; i+1 < len(r.Header); i += 2 {
		if strings.EqualFold(r.Header[i], "Host") {
			req.Host = r.Header[i+1]
			continue
		}
		req.Header.Set(r.Header[i], r.Header[i+1])
	}
	d := &net.Dialer{Timeout: timeout}
	if r.From != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(r.From)}
	}
	c := &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext},
	}
	resp, err := c.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, fmt.Errorf("reading the body: %w", err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(body)}, nil
}

// Do sends r and returns the response, failing tb on a transport error.
func Do(tb testing.TB, r Request) Response {
	tb.Helper()
	resp, err := Send(r)
	if err != nil {
		tb.Fatalf("%v: %v", r, err)
	}
	return resp
}

// Get sends a GET of url with the given header name, value pairs and
// returns what it sent and what came back.
func Get(tb testing.TB, url string, header ...string) (Request, Response) {
	tb.Helper()
	r := Request{URL: url, Header: header}
	return r, Do(tb, r)
}
