package traefikplugin

import (
	"net"
	"net/http"
	"time"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// The paths a request takes. New chooses one for the middleware
// (choosePath) and returns the handler that serves it (handlerOf):
//
//	path                  counts in  key             limit    taken for
//	Middleware.ServeHTTP  memory     remote address  rule's   no store, countStatus, overrides or ban;
//	 (sourcedPath.ServeHTTP          sourceCriterion          legacy headers within the table
//	  memoryHeadersPath.ServeHTTP    any source
//	  with other headers)
//	redisPath.ServeHTTP   Redis      any source      rule's   legacy headers within the table,
//	 (leasePath.ServeHTTP                                     no dry run, countStatus or overrides
//	  with leases)
//	anyPath.ServeHTTP     either     any source      any      the rest (a ban in memory: TakeBanAt), handing on to:
//	serveOverridden       either     any source      its own  overrides
//	serveCounted          either     any source      rule's   countStatus (reserve, then refund)
//
// The table is m.decimals, the header values New tabulates for the rule.
// anyPath decides itself a store's request that redisPath does not take:
// other headers, dry run, or a limit or window past the table.

// The paths, the values of Middleware.path: the table's first three rows,
// the first split by its headers.
const (
	// pathMemory is Middleware.ServeHTTP with legacy headers from the
	// table, written inline.
	pathMemory = iota
	// pathMemoryHeaders is memoryHeadersPath.ServeHTTP: the other
	// headers, or values past the table.
	pathMemoryHeaders
	// pathRedis is redisPath.ServeHTTP.
	pathRedis
	// pathAny is anyPath.ServeHTTP, and through it serveOverridden and
	// serveCounted.
	pathAny
)

// choosePath returns the path of m, whose settings are s and whose store
// is set (useStore), by the table above. tabled reports whether the
// rule's header values fit a table (httplimit.DecimalsFor).
func choosePath(m *Middleware, s settings, tabled bool) int {
	legacy := s.mode == httplimit.HeadersLegacy && tabled
	switch {
	case s.countStatus != nil || s.overrides != nil:
		return pathAny
	case m.store != nil:
		if m.guard != nil && legacy && !s.dryRun {
			return pathRedis
		}
		return pathAny
	case s.ban > 0:
		return pathAny // TakeBanAt (see ban.go)
	case legacy:
		return pathMemory
	}
	return pathMemoryHeaders
}

// setPath sets m's path to p.
func setPath(m *Middleware, p int) {
	m.path = p
}

// sourcedPath, memoryHeadersPath, redisPath, leasePath and anyPath are a
// Middleware served by the path of their name. New returns one of them
// for a middleware of that path (sourcedPath: pathMemory with a
// sourceCriterion; leasePath: pathRedis with leases), so that Traefik
// calls its path directly: under yaegi a call of Middleware.ServeHTTP
// allocates the memory path's frame, taken or not, and one more call a
// frame of its own (see Performance under yaegi).
type (
	sourcedPath       Middleware
	memoryHeadersPath Middleware
	redisPath         Middleware
	leasePath         Middleware
	anyPath           Middleware
)

// handlerOf returns the handler that serves m's path: m itself for the
// memory path.
func handlerOf(m *Middleware) http.Handler {
	switch {
	case m.path == pathMemory && m.sourced:
		return (*sourcedPath)(m)
	case m.path == pathMemoryHeaders:
		return (*memoryHeadersPath)(m)
	case m.path == pathRedis && m.lease != nil:
		return (*leasePath)(m)
	case m.path == pathRedis:
		return (*redisPath)(m)
	case m.path == pathAny:
		return (*anyPath)(m)
	}
	return m
}

// middlewareOf returns the Middleware that h serves, whatever its path,
// or nil when h is none (a service).
func middlewareOf(h http.Handler) *Middleware {
	switch h := h.(type) {
	case *Middleware:
		return h
	case *sourcedPath:
		return (*Middleware)(h)
	case *memoryHeadersPath:
		return (*Middleware)(h)
	case *redisPath:
		return (*Middleware)(h)
	case *leasePath:
		return (*Middleware)(h)
	case *anyPath:
		return (*Middleware)(h)
	}
	return nil
}

// ServeHTTP limits the request: it passes it on or rejects it. It is the
// memory path of the remote address with legacy headers from the table:
// New returns the handler of another path for a middleware that takes one
// (see handlerOf).
//
// It is yaegi-shaped (see Performance under yaegi): an IPv4 remote
// address is keyed inline, an IPv6 one or one without a port in one call
// (remoteKey); the headers are written inline, a rejection in one call
// (reject).
func (m *Middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Declared, then assigned: interpreted, := of the call's results costs
	// a frame slot more.
	var key string
	var err error
	key, _, err = net.SplitHostPort(r.RemoteAddr)
	if err != nil || r.RemoteAddr[0] == '[' {
		// IPv6, or no port. Without a bracket the host has no colon: it is
		// IPv4 (or junk), never "sha256:..." (see httplimit.BoundKey).
		key = remoteKey(m, r)
	}
	d := ratelimit.TakeAt(m.zone, key, time.Now())
	// Value slices of this response's own (see httplimit.Policy), one
	// literal each: interpreted, v[0:1:1] of one literal costs a slot and a
	// reflect copy more per value.
	h := w.Header()
	h[headerLimit] = []string{m.limitStr}
	h[headerRemaining] = []string{m.decimals[d.Remaining]}
	h[headerReset] = []string{m.decimals[(d.ResetAfter+(second-1))/second]}
	if d.Allowed {
		m.next.ServeHTTP(w, r)
		return
	}
	reject(m, w, r, h, d, key)
}

// ServeHTTP is Middleware.ServeHTTP keyed by a sourceCriterion (sourceKey)
// instead of the remote address: the two are apart so that neither frame
// holds the other's key (see Performance under yaegi).
func (p *sourcedPath) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := (*Middleware)(p)
	key := sourceKey(m, r)
	d := ratelimit.TakeAt(m.zone, key, time.Now())
	// One literal a value, as in Middleware.ServeHTTP.
	h := w.Header()
	h[headerLimit] = []string{m.limitStr}
	h[headerRemaining] = []string{m.decimals[d.Remaining]}
	h[headerReset] = []string{m.decimals[(d.ResetAfter+(second-1))/second]}
	if d.Allowed {
		m.next.ServeHTTP(w, r)
		return
	}
	reject(m, w, r, h, d, key)
}

// ServeHTTP is the memory path with the headers of m.headerMode, or
// values past the table: Middleware.ServeHTTP, keyed as it keys, with a
// call of its mode's function (allowedHeaders' switch, written out) for
// its inline headers, and a denial, rare on a busy limit, in one call
// (deny). The two are apart so that neither frame holds the other's
// headers (see Performance under yaegi).
func (p *memoryHeadersPath) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := (*Middleware)(p)
	var key string
	if m.sourced {
		key = sourceKey(m, r)
	} else {
		var err error
		key, _, err = net.SplitHostPort(r.RemoteAddr)
		if err != nil || r.RemoteAddr[0] == '[' {
			key = remoteKey(m, r)
		}
	}
	d := ratelimit.TakeAt(m.zone, key, time.Now())
	if !d.Allowed {
		deny(m, w, r, key, d)
		return
	}
	switch m.headerMode {
	case headersLegacy:
		legacyValues(m, w, d)
	case headersIETF:
		ietfValues(m, w, d)
	case headersBoth:
		bothValues(m, w, d)
	}
	m.next.ServeHTTP(w, r)
}

// reject rejects a request of the memory path and logs it. Its legacy
// headers are in h already; the rest is written as httplimit.WriteRejection
// would, every value from a table, a literal each as in ServeHTTP (see
// logRejection). In dry-run mode deny lets the request through.
func reject(m *Middleware, w http.ResponseWriter, r *http.Request, h http.Header, d ratelimit.Decision, key string) {
	if m.dryRun {
		deny(m, w, r, key, d)
		return
	}
	h[headerRetryAfter] = []string{m.decimals[httplimit.RetrySeconds(d.RetryAfter)]}
	h[headerContentType] = []string{contentTypeText}
	h[headerNoSniff] = []string{noSniff}
	h[headerContentLength] = []string{m.lengthStr}
	w.WriteHeader(m.status)
	w.Write(m.body)
	logRejection(m, key)
}

// ServeHTTP serves a request through Redis, keyed as the memory path
// keys it (the remote address, or sourceKey), with legacy headers from
// the table. It is the memory path with redisstore.TakeKey for TakeAt, in
// one frame (see Performance under yaegi), where anyPath's would cost
// more frames. A denial, or a value past the table (Redis answers what it likes), goes
// to decided. leasePath.ServeHTTP is the same with lease.Take.
func (p *redisPath) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := (*Middleware)(p)
	var key string
	if m.sourced {
		key = sourceKey(m, r)
	} else {
		var err error
		key, _, err = net.SplitHostPort(r.RemoteAddr)
		if err != nil || r.RemoteAddr[0] == '[' {
			key = remoteKey(m, r)
		}
	}
	d := redisstore.TakeKey(r.Context(), m.guard, m.keyCall, m.zone, key, time.Now())
	reset := (d.ResetAfter + (second - 1)) / second
	if d.Allowed && uint64(d.Remaining) < m.tabled && uint64(reset) < m.tabled {
		v := []string{m.limitStr, m.decimals[d.Remaining], m.decimals[reset]}
		h := w.Header()
		h[headerLimit] = v[0:1:1]
		h[headerRemaining] = v[1:2:2]
		h[headerReset] = v[2:3:3]
		m.next.ServeHTTP(w, r)
		return
	}
	decided(m, w, r, key, d)
}

// ServeHTTP is redisPath.ServeHTTP with leases (redis.lease auto):
// lease.Take for redisstore.TakeKey. The two are apart so that neither
// frame holds the other's call (see Performance under yaegi).
func (p *leasePath) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := (*Middleware)(p)
	var key string
	if m.sourced {
		key = sourceKey(m, r)
	} else {
		var err error
		key, _, err = net.SplitHostPort(r.RemoteAddr)
		if err != nil || r.RemoteAddr[0] == '[' {
			key = remoteKey(m, r)
		}
	}
	d := lease.Take(r.Context(), m.lease, key, 0, time.Now())
	reset := (d.ResetAfter + (second - 1)) / second
	if d.Allowed && uint64(d.Remaining) < m.tabled && uint64(reset) < m.tabled {
		v := []string{m.limitStr, m.decimals[d.Remaining], m.decimals[reset]}
		h := w.Header()
		h[headerLimit] = v[0:1:1]
		h[headerRemaining] = v[1:2:2]
		h[headerReset] = v[2:3:3]
		m.next.ServeHTTP(w, r)
		return
	}
	decided(m, w, r, key, d)
}

// ServeHTTP serves a request of any middleware: New returns an anyPath
// for those the two paths above do not take. It hands overrides to
// serveOverridden and countStatus to serveCounted, and decides the rest
// itself, through the store (or the zone).
func (p *anyPath) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := (*Middleware)(p)
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
		// Only a zone with a ban comes here without a store (see build).
		d = ratelimit.TakeBanAt(m.zone, key, time.Now(), 0)
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
