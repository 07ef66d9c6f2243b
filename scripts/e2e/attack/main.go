// Command attack is the client of the count_status attack tests
// (caddymodule/e2e and traefikplugin/e2e). It tries passwords on a login that a limit with
// count_status 401 protects, in ways that leave the proxy in front of it
// without a final status to count by, all from one loopback source
// address, so all on one key of the limit. It prints what each try saw,
// one line a try, in order: the response's status, "timeout" when it gave
// up waiting, "reset" when the server reset the stream, or "error" (the
// error itself goes to standard error). The test asserts on what the
// backend saw; these lines show that the attack ran as meant.
//
//	attack -mode reset -n 30 -from 127.0.0.11 -url 'http://127.0.0.1:8080/login?hold=10s'
//
// Modes:
//
//	reset         HTTP/1.1, a connection a try: read the status line, then
//	              close the connection with SO_LINGER 0, which sends a RST
//	midbody       as reset, once the headers and the body's first byte came
//	h2reset       h2c with prior knowledge, one connection, a stream a try:
//	              RST_STREAM CANCEL as soon as the response's HEADERS come
//	tarpit        HTTP/1.1, a connection a try, closed after -timeout without
//	              an answer; every guess is wrong but the last, the password
//	concurrent    -n tries at once, each on its own connection, all written
//	              once all are connected
//	h2concurrent  -n tries at once, as streams of one h2c connection
//	sequence      -right logins with the password, then -n wrong ones
//
// Only loopback addresses are accepted, at most 1000 tries, and every wait
// ends by -deadline.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// password is the backend's right password (scripts/e2e/backend).
const password = "open-sesame"

var (
	target   *url.URL
	from     net.IP
	deadline time.Time
)

func main() {
	mode := flag.String("mode", "", "reset, midbody, h2reset, tarpit, concurrent, h2concurrent or sequence")
	rawURL := flag.String("url", "", "the login's URL, on a loopback address")
	fromAddr := flag.String("from", "127.0.0.1", "loopback source address: the key of the limit")
	n := flag.Int("n", 30, "tries (at most 1000)")
	right := flag.Int("right", 12, "sequence: logins with the password before the -n wrong ones")
	timeout := flag.Duration("timeout", 300*time.Millisecond, "tarpit: how long a try waits for its answer")
	total := flag.Duration("deadline", time.Minute, "when every try must have ended")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("attack: ")

	var err error
	if target, err = url.Parse(*rawURL); err != nil || target.Scheme != "http" || !loopback(target.Hostname()) {
		log.Fatalf("-url %q: want http:// and a loopback address", *rawURL)
	}
	if target.Port() == "" {
		target.Host = net.JoinHostPort(target.Hostname(), "80")
	}
	if !loopback(*fromAddr) {
		log.Fatalf("-from %q: want a loopback address", *fromAddr)
	}
	from = net.ParseIP(*fromAddr)
	if *n < 1 || *n > 1000 || *right < 0 || *right > 1000 {
		log.Fatal("-n wants 1..1000 tries, -right 0..1000")
	}
	deadline = time.Now().Add(*total)

	var out []string
	switch *mode {
	case "reset", "midbody":
		for i := range *n {
			out = append(out, reset(guess(i), *mode == "midbody"))
		}
	case "h2reset":
		out = h2reset(*n)
	case "tarpit":
		for i := range *n {
			p := guess(i)
			if i == *n-1 {
				p = password
			}
			out = append(out, exchange(p, *timeout))
		}
	case "concurrent":
		out = concurrent(*n)
	case "h2concurrent":
		out = h2concurrent(*n)
	case "sequence":
		for i := range *right + *n {
			p := password
			if i >= *right {
				p = guess(i)
			}
			out = append(out, exchange(p, 5*time.Second))
		}
	default:
		log.Fatalf("unknown -mode %q", *mode)
	}
	fmt.Println(strings.Join(out, "\n"))
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func guess(i int) string { return "guess-" + strconv.Itoa(i+1) }

// failed logs why a try failed and gives its result line.
func failed(what string, err error) string {
	log.Printf("%s: %v", what, err)
	return "error"
}

// soon is the deadline of one try.
func soon(d time.Duration) time.Time {
	if t := time.Now().Add(d); t.Before(deadline) {
		return t
	}
	return deadline
}

func dial() (*net.TCPConn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: from}, Deadline: soon(5 * time.Second)}
	c, err := d.Dial("tcp", target.Host)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// request is an HTTP/1.1 login with password p (in X-Password, as the
// backend takes it).
func request(p string) []byte {
	return fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nX-Password: %s\r\n"+
		"Content-Length: 0\r\nConnection: close\r\n\r\n", target.RequestURI(), target.Host, p)
}

// reset sends a login, reads the status line (and with midbody, the
// headers and the body's first byte), then resets the connection: the
// client has what it wanted, the proxy is left mid-response.
func reset(p string, midbody bool) string {
	c, err := dial()
	if err != nil {
		return failed("dial", err)
	}
	defer func() {
		c.SetLinger(0) // Close sends a RST
		c.Close()
	}()
	c.SetDeadline(soon(5 * time.Second))
	if _, err := c.Write(request(p)); err != nil {
		return failed("write", err)
	}
	r := textproto.NewReader(bufio.NewReader(c))
	line, err := r.ReadLine()
	if err != nil {
		return failed("status line", err)
	}
	status, ok := statusOf(line)
	if !ok {
		return failed("status line", fmt.Errorf("%q", line))
	}
	if midbody {
		h, err := r.ReadMIMEHeader()
		if err != nil {
			return failed("headers", err)
		}
		if h.Get("Content-Length") != "0" {
			if _, err := r.R.ReadByte(); err != nil {
				return failed("body", err)
			}
		}
	}
	return status
}

func statusOf(line string) (string, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") {
		return "", false
	}
	return f[1], true
}

// exchange sends a login on a connection of its own and reads the whole
// response, waiting at most wait; then it closes the connection, as an
// HTTP client that gives up does.
func exchange(p string, wait time.Duration) string {
	c, err := dial()
	if err != nil {
		return failed("dial", err)
	}
	defer c.Close()
	return finish(c, p, wait)
}

// finish writes a login with password p on c and reads its response.
func finish(c *net.TCPConn, p string, wait time.Duration) string {
	c.SetDeadline(soon(wait))
	if _, err := c.Write(request(p)); err != nil {
		return failed("write", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case err != nil:
		return failed("response", err)
	}
	return strconv.Itoa(resp.StatusCode)
}

// concurrent connects n times, then sends the n logins at once.
func concurrent(n int) []string {
	out := make([]string, n)
	conns := make([]*net.TCPConn, n)
	for i := range conns {
		c, err := dial()
		if err != nil {
			log.Fatalf("connection %d of %d: %v", i+1, n, err)
		}
		defer c.Close()
		conns[i] = c
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			<-start
			out[i] = finish(c, guess(i), 10*time.Second)
		})
	}
	close(start)
	wg.Wait()
	return out
}

// h2conn is an h2c connection spoken frame by frame, so that a stream is
// reset exactly when the test says.
type h2conn struct {
	c          *net.TCPConn
	fr         *http2.Framer
	hbuf       bytes.Buffer
	enc        *hpack.Encoder
	next       uint32 // the next stream's ID
	maxStreams uint32 // the server's SETTINGS_MAX_CONCURRENT_STREAMS
}

// dialH2 opens an h2c connection with prior knowledge: the client preface,
// then the server's SETTINGS, which a server without h2c never sends.
func dialH2() (*h2conn, error) {
	c, err := dial()
	if err != nil {
		return nil, err
	}
	h := &h2conn{c: c, fr: http2.NewFramer(c, c), next: 1, maxStreams: math.MaxUint32}
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.enc = hpack.NewEncoder(&h.hbuf)
	c.SetDeadline(soon(5 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		c.Close()
		return nil, err
	}
	if err := h.fr.WriteSettings(); err != nil {
		c.Close()
		return nil, err
	}
	f, err := h.fr.ReadFrame()
	sf, ok := f.(*http2.SettingsFrame)
	if err != nil || !ok || sf.IsAck() {
		c.Close()
		return nil, fmt.Errorf("no HTTP/2 SETTINGS from the server (is h2c on?): %v", err)
	}
	if v, ok := sf.Value(http2.SettingMaxConcurrentStreams); ok {
		h.maxStreams = v
	}
	if err := h.fr.WriteSettingsAck(); err != nil {
		c.Close()
		return nil, err
	}
	return h, nil
}

// post opens a stream with a login with password p and returns its ID.
func (h *h2conn) post(p string) (uint32, error) {
	id := h.next
	h.next += 2
	h.hbuf.Reset()
	for _, f := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":authority", target.Host}, {":path", target.RequestURI()},
		{"x-password", p}, {"content-length", "0"},
	} {
		h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return id, h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.hbuf.Bytes(), EndHeaders: true, EndStream: true})
}

// event is what a frame said about a stream: the status of its response's
// HEADERS, that it ended, or that the server reset it.
type event struct {
	stream uint32
	status string
	end    bool
	reset  bool
}

// read reads frames until one says something about a stream, answering
// those about the connection.
func (h *h2conn) read() (event, error) {
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			return event{}, err
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			return event{stream: f.StreamID, status: f.PseudoValue("status"), end: f.StreamEnded()}, nil
		case *http2.DataFrame:
			// Give the connection's window back: the bodies of the
			// streams reset keep coming and must not stall the others.
			if n := len(f.Data()); n > 0 {
				if err := h.fr.WriteWindowUpdate(0, uint32(n)); err != nil {
					return event{}, err
				}
			}
			if f.StreamEnded() {
				return event{stream: f.StreamID, end: true}, nil
			}
		case *http2.RSTStreamFrame:
			return event{stream: f.StreamID, end: true, reset: true}, nil
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := h.fr.WriteSettingsAck(); err != nil {
					return event{}, err
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				if err := h.fr.WritePing(true, f.Data); err != nil {
					return event{}, err
				}
			}
		case *http2.GoAwayFrame:
			return event{}, fmt.Errorf("GOAWAY %v", f.ErrCode)
		}
	}
}

// h2reset opens n streams in turn on one connection and resets each with
// RST_STREAM CANCEL as soon as its response's HEADERS come.
func h2reset(n int) []string {
	h, err := dialH2()
	if err != nil {
		log.Fatalf("h2c: %v", err)
	}
	defer h.c.Close()
	var out []string
	for i := range n {
		h.c.SetDeadline(soon(5 * time.Second))
		id, err := h.post(guess(i))
		if err != nil {
			return append(out, failed("stream", err))
		}
		var ev event
		for ev.stream != id || ev.status == "" && !ev.end {
			if ev, err = h.read(); err != nil {
				return append(out, failed("stream", err))
			}
		}
		switch {
		case ev.reset:
			out = append(out, "reset")
		case ev.status == "":
			out = append(out, failed("stream", errors.New("ended without a response")))
		default:
			if !ev.end {
				if err := h.fr.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
					return append(out, failed("RST_STREAM", err))
				}
			}
			out = append(out, ev.status)
		}
	}
	return out
}

// h2concurrent opens n streams at once on one connection and reads their
// responses whole.
func h2concurrent(n int) []string {
	h, err := dialH2()
	if err != nil {
		log.Fatalf("h2c: %v", err)
	}
	defer h.c.Close()
	if h.maxStreams < uint32(n) {
		log.Fatalf("h2c: the server allows %d concurrent streams, not %d", h.maxStreams, n)
	}
	h.c.SetDeadline(soon(10 * time.Second))
	for i := range n {
		if _, err := h.post(guess(i)); err != nil {
			log.Fatalf("h2c: stream %d: %v", i+1, err)
		}
	}
	out := make([]string, n)
	done := make([]bool, n)
	for ended := 0; ended < n; {
		ev, err := h.read()
		if err != nil {
			log.Printf("h2c: after %d streams of %d: %v", ended, n, err)
			break
		}
		i := int(ev.stream-1) / 2
		if ev.stream%2 == 0 || i >= n || done[i] {
			continue
		}
		if ev.status != "" && out[i] == "" {
			out[i] = ev.status
		}
		if ev.end {
			done[i] = true
			ended++
			if out[i] == "" && ev.reset {
				out[i] = "reset"
			}
		}
	}
	for i := range out {
		if out[i] == "" {
			out[i] = "error"
		}
	}
	return out
}
