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
func countStatus(list []string) (*httplimit.StatusSet, error) {
	var items []string
	for _, v := range list {
		items = append(items, strings.Split(v, ",")...)
	}
	set, err := httplimit.ParseStatusRanges(items)
	if err != nil {
		return nil, fieldError("countStatus", strings.TrimPrefix(err.Error(), "countStatus: "))
	}
	return set, nil
}

// serveCounted serves a request of a countStatus middleware. It reserves
// the request's count, passes it on if the key had room for it, and gives
// the count back once the response's status is settled and not one
// countStatus lists. Anything else keeps the count: a
// panic (http.ErrAbortHandler, a client gone mid-body), a client that
// left, a timeout, a hijack without status. A rejection (ours) counts
// nothing.
func serveCounted(m *Middleware, w http.ResponseWriter, r *http.Request, key string) {
	serveCountedLimit(m, w, r, key, 0)
}

// serveCountedLimit is serveCounted for a key whose limit is limit (0:
// the rule's). In memory the reservation and its refund are one call each
// (ratelimit.TakeReservedAt, RefundAt); a store takes the general path.
// Nothing is deferred: a panic in next unwinds past the refund, and the
// count stays.
func serveCountedLimit(m *Middleware, w http.ResponseWriter, r *http.Request, key string, limit int64) {
	if m.store != nil {
		serveCountedStore(m, w, r, key, limit)
		return
	}
	d := ratelimit.TakeReservedAt(m.zone, key, time.Now(), limit)
	if !d.Allowed {
		deny(m, w, r, key, d)
		return
	}
	if passCounted(m, w, r, d) {
		ratelimit.RefundAt(m.zone, key, &d)
	}
}

// serveCountedStore is serveCountedLimit with a store.
func serveCountedStore(m *Middleware, w http.ResponseWriter, r *http.Request, key string, limit int64) {
	items := []ratelimit.Item{{Zone: m.zone, Key: key, Refundable: true, Limit: limit}}
	out := make([]ratelimit.Decision, 1)
	if _, err := m.store.Take(r.Context(), time.Now(), items, out); err != nil {
		out[0] = failOpen(m, limit)
	}
	if !out[0].Allowed {
		deny(m, w, r, key, out[0])
		return
	}
	if passCounted(m, w, r, out[0]) && m.refunder != nil {
		// The response is gone: a client that leaves now must not keep
		// the refund from Redis. The Redis client's timeouts bound the
		// call; the guard logs failures.
		m.refunder.Refund(context.Background(), items, out)
	}
}

// passCounted passes a counted request on and reports whether its count
// goes back. It writes the headers of d, the decision that reserved the
// count (the budget with this request in it), passes the request on
// through a statusRecorder, and answers true when the response's status
// is settled and not one countStatus lists.
func passCounted(m *Middleware, w http.ResponseWriter, r *http.Request, d ratelimit.Decision) bool {
	writeAllowed(m, w, d)
	rec := &statusRecorder{ResponseWriter: w}
	m.next.ServeHTTP(rec, r)
	status := rec.status.Code()
	if status == 0 && !rec.hijacked {
		status = http.StatusOK // nothing written: net/http sends 200
	}
	return httplimit.Settled(status, r.Context().Err() != nil) && !m.countStatus.Has(status)
}

// statusRecorder remembers the status of the final response written
// through it and whether the connection was taken over, and keeps the
// optional interfaces of the writer it wraps.
type statusRecorder struct {
	http.ResponseWriter
	status   httplimit.ResponseStatus
	hijacked bool
}

func (rec *statusRecorder) WriteHeader(code int) {
	rec.status.Header(code)
	rec.ResponseWriter.WriteHeader(code)
}

// Write passes b on and flushes it. Under yaegi the writer the next
// handler gets implements http.ResponseWriter and http.Hijacker only
// (https://github.com/traefik/traefik/issues/10269): Flush and Unwrap are not reachable, so a proxy's
// flushes of a streamed response (server-sent events, a gRPC stream)
// would never get past the recorder. Flushing every write of a response
// without a Content-Length (a stream: server-sent events, a gRPC stream)
// streams it as Traefik does without a plugin. A response with one is not
// flushed: its last bytes must wait for the handler to return, or a client
// that has read them all could close the connection before the refund
// looks, and an honest request would keep its count as one whose client
// left.
func (rec *statusRecorder) Write(b []byte) (int, error) {
	rec.status.Body()
	n, err := rec.ResponseWriter.Write(b)
	if f, ok := rec.ResponseWriter.(http.Flusher); ok && err == nil && rec.ResponseWriter.Header().Get("Content-Length") == "" {
		f.Flush()
	}
	return n, err
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
	conn, brw, err := h.Hijack()
	rec.hijacked = rec.hijacked || err == nil
	return conn, brw, err
}

// Unwrap lets http.ResponseController reach the wrapped writer.
func (rec *statusRecorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }
