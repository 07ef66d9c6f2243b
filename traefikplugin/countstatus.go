package traefikplugin

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// countStatus parses the countStatus list. A label hands it over as one
// comma-separated string or already split: both are accepted.
func countStatus(list []string) (*ratelimit.StatusSet, error) {
	var items []string
	for _, v := range list {
		items = append(items, strings.Split(v, ",")...)
	}
	set, err := ratelimit.ParseStatusRanges(items)
	if err != nil {
		return nil, fieldError("countStatus", strings.TrimPrefix(err.Error(), "countStatus: "))
	}
	return set, nil
}

// serveCounted checks the request without counting it, passes it on if
// the key has room for one more, and charges it once the response's status
// is known and listed. A rejection (ours) is never charged.
func serveCounted(m *Middleware, w http.ResponseWriter, r *http.Request, key string) {
	serveCountedLimit(m, w, r, key, 0)
}

// serveCountedLimit is serveCounted for a key whose limit is limit (0:
// the rule's).
func serveCountedLimit(m *Middleware, w http.ResponseWriter, r *http.Request, key string, limit int64) {
	items := []ratelimit.Item{{Zone: m.zone, Key: key, Deferred: true, Limit: limit}}
	out := make([]ratelimit.Decision, 1)
	if m.store == nil {
		ratelimit.TakeAll(time.Now(), items, out)
	} else if _, err := m.store.Take(r.Context(), time.Now(), items, out); err != nil {
		out[0] = failOpen(m, limit)
	}
	if !out[0].Allowed {
		deny(m, w, r, key, out[0])
		return
	}
	httplimit.WriteHeaders(m.policy, w.Header(), out[0]) // what the check saw
	rec := &statusRecorder{ResponseWriter: w}
	m.next.ServeHTTP(rec, r)
	status := rec.status.Code()
	if status == 0 {
		status = http.StatusOK // nothing written: net/http sends 200
	}
	charge(m, key, limit, status)
}

// statusRecorder remembers the status of the final response written
// through it, and keeps the optional interfaces of the writer it wraps.
type statusRecorder struct {
	http.ResponseWriter
	status httplimit.ResponseStatus
}

func (rec *statusRecorder) WriteHeader(code int) {
	rec.status.Header(code)
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *statusRecorder) Write(b []byte) (int, error) {
	rec.status.Body()
	return rec.ResponseWriter.Write(b)
}

// Flush passes on a flush, for streamed responses.
func (rec *statusRecorder) Flush() {
	if f, ok := rec.ResponseWriter.(http.Flusher); ok {
		rec.status.Body()
		f.Flush()
	}
}

// Hijack passes on a hijack, for WebSocket upgrades.
func (rec *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := rec.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("windowlimit: the response writer cannot be hijacked")
	}
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the wrapped writer.
func (rec *statusRecorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// charge counts the request of key, whose limit is limit, if its
// response's status is listed.
func charge(m *Middleware, key string, limit int64, status int) {
	if !m.countStatus.Has(status) {
		return
	}
	items := []ratelimit.Item{{Zone: m.zone, Key: key, Limit: limit}}
	if m.store == nil {
		ratelimit.ChargeAll(time.Now(), items)
		return
	}
	if m.charger != nil {
		// The response is gone: a client that left must not undo the
		// count. The Redis client's timeouts bound the call; the guard
		// logs failures and answers them by onStoreError.
		m.charger.Charge(context.Background(), time.Now(), items)
	}
}
