// Package floor holds the reference middlewares that scripts/bench-traefik.sh
// and scripts/yaegitest measure windowlimit against under yaegi: what any
// Traefik plugin pays, and what any sliding window pays. They are
// yardsticks, not limiters to deploy.
package floor

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Config chooses the middleware: Redis set, the least per-request Redis
// counter; Window set, the least sliding window; otherwise the trivial
// counter.
type Config struct {
	Window bool `json:"window,omitempty"`
	// Redis is the address (host:port) of the Redis the least Redis
	// counter sends its commands to.
	Redis string `json:"redis,omitempty"`
}

// CreateConfig returns the trivial counter's configuration.
func CreateConfig() *Config { return &Config{} }

// New returns the middleware config chooses, in front of next.
func New(_ context.Context, next http.Handler, config *Config, _ string) (http.Handler, error) {
	if config.Redis != "" {
		return NewRedisCounter(next, config.Redis), nil
	}
	if config.Window {
		return NewWindow(next), nil
	}
	return NewCounter(next), nil
}

// passThrough only calls the next handler: the least any yaegi
// middleware costs.
type passThrough struct{ next http.Handler }

// NewPassThrough returns the middleware that only calls next.
func NewPassThrough(next http.Handler) http.Handler { return &passThrough{next: next} }

func (m *passThrough) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.next.ServeHTTP(w, r) }

// counter is the trivial plugin: a mutex, a map increment and one header.
type counter struct {
	next http.Handler
	mu   sync.Mutex
	n    map[string]int
}

// NewCounter returns the trivial plugin in front of next.
func NewCounter(next http.Handler) http.Handler { return &counter{next: next, n: map[string]int{}} }

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.n[r.RemoteAddr]++
	c.mu.Unlock()
	w.Header().Set("X-Count", "1")
	c.next.ServeHTTP(w, r)
}

// window is the least a sliding window of the remote address takes: the
// clock, one mutex, one map of per-address counters of the current and the
// previous sub-window (one sub-window per window), the previous one
// weighted by how much of it the window still covers, and the three legacy
// headers from a table. It has none of what a limiter needs beyond that:
// no bound on its keys, no sharding, no IPv6 grouping, no clock-step
// handling, and it never denies (the benchmark's requests are all allowed).
type window struct {
	next  http.Handler
	mu    sync.Mutex
	cells map[string]*cell
	span  int64
	spanF float64
	limit float64
	dec   []string
	lim   string
}

type cell struct {
	end       int64 // when the current sub-window ends
	cur, prev float64
}

// NewWindow returns the least sliding window in front of next: 60000
// requests a second.
func NewWindow(next http.Handler) http.Handler {
	const limit = 60000
	dec := make([]string, limit+1)
	for i := range dec {
		dec[i] = strconv.Itoa(i)
	}
	return &window{next: next, cells: map[string]*cell{}, span: int64(time.Second), spanF: float64(time.Second),
		limit: limit, dec: dec, lim: dec[limit]}
}

func (m *window) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := r.RemoteAddr
	i := len(a) - 1
	for i > 0 && a[i] != ':' {
		i--
	}
	key := a[:i]
	t := time.Now().UnixNano()
	m.mu.Lock()
	c := m.cells[key]
	if c == nil {
		c = &cell{end: t - t%m.span + m.span}
		m.cells[key] = c
	}
	if t >= c.end {
		if t < c.end+m.span {
			c.prev = c.cur
		} else {
			c.prev = 0
		}
		c.cur = 0
		c.end = t - t%m.span + m.span
	}
	n := c.cur + c.prev*float64(c.end-t)/m.spanF + 1
	c.cur++
	m.mu.Unlock()
	rem := 0
	if n < m.limit {
		rem = int(m.limit - n)
	}
	v := []string{m.lim, m.dec[rem], m.dec[1]}
	h := w.Header()
	h["X-Ratelimit-Limit"] = v[0:1:1]
	h["X-Ratelimit-Remaining"] = v[1:2:2]
	h["X-Ratelimit-Reset"] = v[2:3:3]
	m.next.ServeHTTP(w, r)
}

// redisCounter is the least a yaegi plugin that asks Redis on every
// request takes: one INCR of the X-Key header's key, sent on a pooled
// connection, its one-line reply read back and written as a header. It
// has none of what a limiter needs beyond that: no window (the count
// never resets), no script (INCR is the least work a Redis call can ask),
// no pipelining, no failure policy (a Redis error is a 502), no timeouts.
type redisCounter struct {
	next  http.Handler
	addr  string
	mu    sync.Mutex
	conns []*redisConn // idle
}

// redisConn is one pooled connection and its buffers.
type redisConn struct {
	c   net.Conn
	r   *bufio.Reader
	buf []byte
}

// NewRedisCounter returns the least per-request Redis counter in front of
// next, talking to the Redis at addr.
func NewRedisCounter(next http.Handler, addr string) http.Handler {
	return &redisCounter{next: next, addr: addr}
}

func (m *redisCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var c *redisConn
	m.mu.Lock()
	if n := len(m.conns); n > 0 {
		c = m.conns[n-1]
		m.conns = m.conns[:n-1]
	}
	m.mu.Unlock()
	if c == nil {
		nc, err := net.Dial("tcp", m.addr)
		if err != nil {
			http.Error(w, "redis: "+err.Error(), http.StatusBadGateway)
			return
		}
		c = &redisConn{c: nc, r: bufio.NewReader(nc), buf: make([]byte, 0, 128)}
	}
	key := r.Header.Get("X-Key")
	b := append(c.buf[:0], "*2\r\n$4\r\nINCR\r\n$"...)
	b = strconv.AppendInt(b, int64(len(key)+8), 10)
	b = append(b, "\r\nfloor:{"...)
	b = append(b, key...)
	b = append(b, "}\r\n"...)
	c.buf = b
	_, err := c.c.Write(b)
	var line []byte
	if err == nil {
		line, err = c.r.ReadSlice('\n')
	}
	if err != nil || len(line) < 4 || line[0] != ':' {
		c.c.Close()
		http.Error(w, "redis: bad reply", http.StatusBadGateway)
		return
	}
	w.Header().Set("X-Count", string(line[1:len(line)-2]))
	m.mu.Lock()
	m.conns = append(m.conns, c)
	m.mu.Unlock()
	m.next.ServeHTTP(w, r)
}
