package caddymodule

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// serveCounted passes an admitted request that count_status zones checked
// without counting, and charges those zones whose statuses include the
// response's. It releases s.
func (h *Handler) serveCounted(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, s *scratch) error {
	rec := &statusRecorder{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	err := next.ServeHTTP(rec, r)
	status := rec.status.Code()
	if status == 0 {
		// Nothing written: an error handled further out (handle_errors)
		// writes the response, with the error's status.
		status = http.StatusOK
		if err != nil {
			status = http.StatusInternalServerError
			var he caddyhttp.HandlerError
			if errors.As(err, &he) && he.StatusCode != 0 {
				status = he.StatusCode
			}
		}
	}
	charged := s.items[:0:0]
	for k, i := range s.which {
		if s.items[k].Deferred && h.zones[i].countStatus.Has(status) {
			charged = append(charged, s.items[k])
		}
	}
	h.release(s)
	if len(charged) > 0 {
		// The response is gone: a client that left must not undo its
		// count. The store's own timeouts bound the call.
		ctx := context.WithoutCancel(r.Context())
		if err := h.store.(ratelimit.Charger).Charge(ctx, time.Now(), charged); err != nil {
			h.logger.Error("rate limit store could not count a response", zap.Error(err))
		}
	}
	return err
}

// statusRecorder remembers the status of the final response written
// through it.
type statusRecorder struct {
	*caddyhttp.ResponseWriterWrapper
	status httplimit.ResponseStatus
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
