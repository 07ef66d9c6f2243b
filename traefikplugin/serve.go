package traefikplugin

import (
	"net"
	"net/http"
	"time"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// ServeHTTP decides the request and passes it on or rejects it.
//
// Under yaegi a call allocates a frame with a slot for every local and
// temporary of the callee, taken branches or not, so the cost of a
// function grows with its size; a method call costs several times a
// function call, and a call into the standard library a few hundred
// nanoseconds (measured: go test -bench 'Interpreted|PluginConfigs' in
// scripts/yaegitest). ServeHTTP therefore holds the in-memory zone's
// requests without countStatus or overrides: one call into the core, a
// few into the standard library, and no branch it does not need (the
// slots of an untaken branch are allocated all the same). The remote
// address is read inline: an IPv6 one (bracketed: "[2001:db8::1]:443",
// grouped by v6Bits) or one without a port adds one call, an IPv4 one
// pays one byte comparison; a sourceCriterion adds one (sourceKey).
// Legacy headers whose values a decimals table holds are written inline,
// in one allocation for their slices; other headers, or values past the
// tables, add one call (decidedFast), and a rejection one. The remote
// address, legacy headers and a redis block go to serveRedis; everything
// else is in serveOther.
func (m *Middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.slow {
		if m.redisInline {
			serveRedis(m, w, r)
			return
		}
		serveOther(m, w, r)
		return
	}
	var key string
	if m.source != nil {
		key = sourceKey(m, r)
	} else {
		var err error
		key, _, err = net.SplitHostPort(r.RemoteAddr)
		if err != nil || r.RemoteAddr[0] == '[' {
			// IPv6, or no port. Without a bracket the host has no colon: it is
			// IPv4 (or junk), never "sha256:..." (see httplimit.BoundKey).
			key = remoteKey(m, r)
		}
	}
	d := ratelimit.TakeAt(m.zone, key, time.Now().UnixNano())
	if !m.tabled {
		decidedFast(m, w, r, key, d)
		return
	}
	// Value slices of this response's own (see httplimit.Policy), capped
	// so that an append cannot reach the next one.
	v := []string{m.limitStr, m.decimals[d.Remaining], m.decimals[(d.ResetAfter+time.Second-1)/time.Second]}
	h := w.Header()
	h[headerLimit] = v[0:1:1]
	h[headerRemaining] = v[1:2:2]
	h[headerReset] = v[2:3:3]
	if !d.Allowed {
		reject(m, w, r, h, d, key)
		return
	}
	m.next.ServeHTTP(w, r)
}

// reject completes the rejection of ServeHTTP's legacy headers from a
// table, which h already holds, as httplimit.WriteRejection would, with
// every value from a table, and logs it (see logRejection); in dry-run
// mode deny lets the request through.
func reject(m *Middleware, w http.ResponseWriter, r *http.Request, h http.Header, d ratelimit.Decision, key string) {
	if m.dryRun {
		deny(m, w, r, key, d)
		return
	}
	v := []string{m.decimals[httplimit.RetrySeconds(d.RetryAfter)], contentTypeText, noSniff, m.lengthStr}
	h[headerRetryAfter] = v[0:1:1]
	h[headerContentType] = v[1:2:2]
	h[headerNoSniff] = v[2:3:3]
	h[headerContentLength] = v[3:4:4]
	w.WriteHeader(m.status)
	w.Write(m.body)
	logRejection(m, key)
}

// serveOther serves a request keyed by a configured source, decided by a
// store, answered with other headers than legacy, or counted by its
// response (countStatus), or with overrides.
func serveOther(m *Middleware, w http.ResponseWriter, r *http.Request) {
	if m.overrides != nil {
		serveOverridden(m, w, r)
		return
	}
	var key string
	if m.source == nil {
		key = addrKey(r.RemoteAddr, m.v6Bits)
	} else {
		key = keyOf(m.source, r)
	}
	if m.countStatus != nil {
		serveCounted(m, w, r, key)
		return
	}
	var d ratelimit.Decision
	if m.store == nil {
		d = ratelimit.TakeAt(m.zone, key, time.Now().UnixNano())
	} else {
		d = takeFromStore(r.Context(), m, key)
	}
	decided(m, w, r, key, d)
}

// decided carries out the decision d on the request.
func decided(m *Middleware, w http.ResponseWriter, r *http.Request, key string, d ratelimit.Decision) {
	if d.Allowed {
		writeAllowed(m, w, d)
		m.next.ServeHTTP(w, r)
		return
	}
	deny(m, w, r, key, d)
}

// writeAllowed writes the headers of an allowed d: from the tables under
// the rule's limit, with httplimit.WriteHeaders under an override's.
func writeAllowed(m *Middleware, w http.ResponseWriter, d ratelimit.Decision) {
	if d.Limit == m.ruleLimit {
		allowedHeaders(m, w, d)
		return
	}
	httplimit.WriteHeaders(m.policy, w.Header(), d)
}

// deny rejects the request and logs it (see logRejection), or in dry-run
// mode logs it and lets it through.
func deny(m *Middleware, w http.ResponseWriter, r *http.Request, key string, d ratelimit.Decision) {
	if m.dryRun {
		logDryRun(m, key)
		httplimit.WriteHeaders(m.policy, w.Header(), d)
		m.next.ServeHTTP(w, r)
		return
	}
	httplimit.WriteRejection(m.policy, w, d, m.status, m.message)
	logRejection(m, key)
}

// decidedFast carries out the decision d on a request of ServeHTTP whose
// headers are not legacy from a table. A denial, rare on a busy limit,
// goes to deny.
func decidedFast(m *Middleware, w http.ResponseWriter, r *http.Request, key string, d ratelimit.Decision) {
	if !d.Allowed {
		deny(m, w, r, key, d)
		return
	}
	allowedHeaders(m, w, d)
	m.next.ServeHTTP(w, r)
}

// serveRedis is ServeHTTP for a middleware that ServeHTTP's inline path
// would serve but for its store, Redis through m.guard: the remote
// address as key, legacy headers from the decimals table, no dry run,
// overrides or countStatus (useStore knows: m.slow was false before it).
// It is ServeHTTP's inline path with ratelimit.TakeRemote (lease.Take
// with leases on, which spends a hot key's lease without a call) for the
// in-memory TakeAt, in a frame of its own: under yaegi a call allocates
// a slot for every local and temporary of its callee, so the common
// request with Redis (admitted) costs this one frame and TakeRemote's
// (or Take's),
// rather than ServeHTTP's, serveOther's, takeFromStore's, decided's and
// httplimit.WriteHeaders's. A denial, or a value that the table does not
// hold (Redis answers what it likes), goes to decided.
func serveRedis(m *Middleware, w http.ResponseWriter, r *http.Request) {
	key, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil || r.RemoteAddr[0] == '[' {
		key = remoteKey(m, r)
	}
	var d ratelimit.Decision
	if m.lease != nil {
		d = lease.Take(m.lease, r.Context(), key, 0, time.Now())
	} else {
		d = ratelimit.TakeRemote(m.guard, r.Context(), m.zone, key, time.Now())
	}
	reset := (d.ResetAfter + time.Second - 1) / time.Second
	if !d.Allowed || uint64(d.Remaining) >= uint64(len(m.decimals)) || uint64(reset) >= uint64(len(m.decimals)) {
		decided(m, w, r, key, d)
		return
	}
	v := []string{m.limitStr, m.decimals[d.Remaining], m.decimals[reset]}
	h := w.Header()
	h[headerLimit] = v[0:1:1]
	h[headerRemaining] = v[1:2:2]
	h[headerReset] = v[2:3:3]
	m.next.ServeHTTP(w, r)
}
