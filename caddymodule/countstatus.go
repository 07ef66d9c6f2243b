package caddymodule

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// serveCounted passes on an admitted request that count_status zones
// reserved, and once the response's status is settled, refunds the zones
// that do not count it. Anything else keeps every count: a panic (such as
// http.ErrAbortHandler, a client gone mid-body), a client that left, a
// timeout, a hijack without status. It releases s.
func (h *Handler) serveCounted(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, s *scratch) (err error) {
	rec := &statusRecorder{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	returned := false
	defer func() {
		if returned {
			h.refund(r, s, rec.settled(r, err))
		}
		h.release(s)
	}()
	err = next.ServeHTTP(rec, r)
	returned = true
	return err
}

// refund gives back the reservations of the zones that do not count
// status (0: nothing is settled, nothing comes back).
func (h *Handler) refund(r *http.Request, s *scratch, status int) {
	if status == 0 {
		return
	}
	out, back := s.out[:len(s.items)], false
	for k, i := range s.which {
		if !s.items[k].Refundable {
			continue
		}
		if h.zones[i].countStatus.Has(status) {
			out[k] = ratelimit.Decision{} // counted: no receipt to refund
		} else {
			back = true
		}
	}
	if !back {
		return
	}
	// The response is gone: a client that leaves now must not keep the
	// refund from Redis. The store's own timeouts bound the call.
	ctx := context.WithoutCancel(r.Context())
	if err := h.store.(ratelimit.Refunder).Refund(ctx, s.items, out); err != nil {
		h.logger.Error("rate limit store could not refund a response", zap.Error(err))
	}
}

// statusRecorder remembers the status of the final response written
// through it, and whether the connection was taken over.
type statusRecorder struct {
	*caddyhttp.ResponseWriterWrapper
	status   httplimit.ResponseStatus
	hijacked bool
}

// settled returns the status the client got from a handler that returned
// err, or 0 when it is not settled (see httplimit.Settled). With nothing
// written, an error handled further out (handle_errors) writes the
// response with the error's status, if it has one; no error, 200.
func (rec *statusRecorder) settled(r *http.Request, err error) int {
	status := rec.status.Code()
	if status == 0 && !rec.hijacked {
		status = http.StatusOK
		if err != nil {
			status = 0
			var he caddyhttp.HandlerError
			if errors.As(err, &he) {
				status = he.StatusCode
			}
		}
	}
	if !httplimit.Settled(status, r.Context().Err() != nil) {
		return 0
	}
	return status
}

// Hijack passes on a hijack, which http.ResponseController would
// otherwise reach through Unwrap, past the recorder: a connection taken
// over with no status written has none settled.
func (rec *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(rec.ResponseWriterWrapper.ResponseWriter).Hijack()
	rec.hijacked = rec.hijacked || err == nil
	return conn, brw, err
}

func (rec *statusRecorder) WriteHeader(code int) {
	rec.status.Header(code)
	rec.ResponseWriterWrapper.WriteHeader(code)
}

func (rec *statusRecorder) Write(b []byte) (int, error) {
	rec.status.Body()
	return rec.ResponseWriterWrapper.Write(b)
}

// ReadFrom is the wrapper's, which io.Copy calls for a body from a reader
// without WriteTo (a proxied one): it writes past Write.
func (rec *statusRecorder) ReadFrom(r io.Reader) (int64, error) {
	rec.status.Body()
	return rec.ResponseWriterWrapper.ReadFrom(r)
}

// FlushError passes on http.ResponseController's Flush, which would
// otherwise reach the writer below through Unwrap, past the recorder.
func (rec *statusRecorder) FlushError() error {
	err := http.NewResponseController(rec.ResponseWriterWrapper.ResponseWriter).Flush()
	if err == nil {
		rec.status.Body()
	}
	return err
}

// countStatus parses count_status's arguments: codes, or classes written
// as Caddy's status matcher does (5xx), which become their digit.
func countStatus(d *caddyfile.Dispenser) ([]int, error) {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return nil, d.ArgErr()
	}
	codes := make([]int, 0, len(args))
	for _, a := range args {
		if len(a) == 3 && strings.HasSuffix(strings.ToLower(a), "xx") && a[0] >= '1' && a[0] <= '5' {
			codes = append(codes, int(a[0]-'0'))
			continue
		}
		c, err := strconv.Atoi(a)
		if err != nil || c < 100 || c > 599 {
			return nil, d.Errf("count_status: %q is neither a status code (100-599) nor a class such as 5xx", a)
		}
		codes = append(codes, c)
	}
	return codes, nil
}
