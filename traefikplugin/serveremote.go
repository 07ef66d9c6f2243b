package traefikplugin

import (
	"net/http"
	"time"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// serveRemote is ServeHTTP's inline path with Redis deciding: the
// request's key from its source, one call into the core
// (ratelimit.TakeRemote, through the guard), and the legacy headers from
// the decimals table, as ServeHTTP writes them. It serves a middleware
// whose m.remote is set: a Guard in front of Redis, legacy headers, no
// dry run, overrides or countStatus, a limit and window within a table.
// A decision with a value beyond the table (which a Redis of a
// misbehaving version could return) is written by decided, the general
// path; TestServeRemoteMatchesGeneral compares the two.
func serveRemote(m *Middleware, w http.ResponseWriter, r *http.Request) {
	var key string
	if m.source == nil {
		key = httplimit.RemoteKey(r.RemoteAddr, m.v6Bits)
	} else {
		key = httplimit.KeyOf(m.source, r)
	}
	d := ratelimit.TakeRemote(m.guard, r.Context(), m.zone, key, time.Now())
	max := int64(len(m.decimals))
	reset := int64((d.ResetAfter + time.Second - 1) / time.Second)
	if d.Remaining < 0 || d.Remaining >= max || reset < 0 || reset >= max || d.RetryAfter >= time.Duration(max)*time.Second {
		decided(m, w, r, key, d)
		return
	}
	v := []string{m.limitStr, m.decimals[d.Remaining], m.decimals[reset]}
	h := w.Header()
	h[headerLimit] = v[0:1:1]
	h[headerRemaining] = v[1:2:2]
	h[headerReset] = v[2:3:3]
	if !d.Allowed {
		reject(m, w, h, d)
		return
	}
	m.next.ServeHTTP(w, r)
}
