package traefikplugin

import (
	"context"
	"net/http"
	"strconv"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// Middleware limits the requests it serves. It is safe for concurrent use.
//
// Everything that does not depend on the request is computed in New (see
// Performance under yaegi). The fields are grouped by what they serve.
type Middleware struct {
	// The log lines' rate limits, first: their atomic operations need the
	// 64-bit alignment that only the start of a struct has on 32-bit
	// platforms (see log.go). lastDryRunLog and lastRejectLog are the Unix
	// seconds of the last dry-run and rejection lines; rejectsSuppressed
	// counts the rejections since then that got none.
	lastDryRunLog     int64
	lastRejectLog     int64
	rejectsSuppressed int64

	name string
	next http.Handler
	// path is the way the requests are served (see choosePath and
	// handlerOf).
	path int

	// The key of a request. source is nil for the default source, the
	// remote address, whose IPv6 addresses are grouped by v6Bits; sourced
	// is set when it is not, a flag the paths test in one frame slot
	// where source != nil costs two (see Performance under yaegi).
	source  *keySource
	sourced bool
	v6Bits  int
	// keyKind, depth and header are the source's kind, ipStrategy.depth
	// and requestHeaderName, for sourceKey.
	keyKind sourceKind
	depth   int
	header  string
	// excluded4 holds the IPv4 ranges of ipStrategy.excludedIPs for
	// excludedKey, as pairs of masked address and mask.
	excluded4 []uint32

	// The decision. zone holds the rule, and the counts unless a store
	// keeps them.
	zone *ratelimit.Zone
	// store, when set, takes the decisions instead of zone (a remote
	// store); nil keeps the in-memory zone.
	store ratelimit.Store
	// guard is store when it is a *guard.Guard (Redis), called as a
	// plain function on the common request (see takeFromStore).
	guard *guard.Guard
	// keyCall is the Redis store's call prepared for zone, which
	// redisstore.TakeKey makes on the common request; nil when it has none.
	keyCall *redisstore.KeyCall
	// lease, when set, decides Redis requests, spending hot keys' leases
	// locally (redis.lease auto, no countStatus; see leaseTableFor).
	lease *lease.Table
	// countStatus, when set, holds the statuses of the responses counted:
	// requests are reserved, then refunded unless their status is listed
	// (see serveCounted).
	countStatus *httplimit.StatusSet
	// refunder gives back m.store's reservations; nil for the in-memory
	// zone.
	refunder ratelimit.Refunder
	// overrides, when set, give some keys or client addresses their own
	// limit or exempt them (see serveOverridden). cidrs is set when
	// some override is a CIDR: only then is the client address parsed.
	overrides *ratelimit.Overrides
	cidrs     bool

	// The headers.
	policy     *httplimit.Policy
	headerMode httplimit.HeaderMode
	// decimals is the header values table every path writes from; the
	// values past it are formatted (see decimal).
	decimals []string
	// tabled is the length of decimals, for the Redis paths' check that
	// Redis answered values within it.
	tabled uint64
	// ruleLimit is the rule's limit, and limitStr its X-RateLimit-Limit
	// value.
	ruleLimit int64
	limitStr  string
	// policyStr and ratePrefix are the RateLimit-Policy value and the
	// start of the RateLimit value (see httplimit.Policy).
	policyStr  string
	ratePrefix string

	// The rejection: status and message, and the message as the body
	// and its Content-Length. In dry-run mode none is sent.
	status    int
	message   string
	body      []byte
	lengthStr string
	dryRun    bool
	// logKey names the key in the log lines.
	logKey bool
}

// New returns the middleware named name in front of next. Traefik calls it
// once per router using the middleware and again on every reload; the
// counts of a name survive as long as its rule does not change. New never
// blocks and never dials Redis: the client connects on the first request.
//
// New returns no error. A configuration it cannot build, every bad value
// named with its option, is logged, and the middleware it returns refuses
// every request with 500 (see misconfigured): an error would disable the
// router, and another router matching the same requests would serve them
// unlimited.
func New(ctx context.Context, next http.Handler, config *Config, name string) (http.Handler, error) {
	if name == "" {
		name = "windowlimit"
	}
	h, err := buildAll(next, config, name)
	if err != nil {
		return newMisconfigured(name, err), nil
	}
	return h, nil
}

// buildAll returns the middleware of config: its rate, its in-flight
// limit in front of the rate, or both.
func buildAll(next http.Handler, config *Config, name string) (http.Handler, error) {
	if config != nil {
		d, err := config.decoded()
		if err != nil {
			return nil, err
		}
		if err := d.checkInFlight(); err != nil {
			return nil, err
		}
		if d.inFlightOnly() {
			if next == nil {
				return nil, fieldError("next", "missing handler")
			}
			return buildInFlightOnly(next, d, name)
		}
		if d.InFlight > 0 {
			m, err := build(next, d, name)
			if err != nil {
				return nil, err
			}
			s, err := d.validate()
			if err != nil {
				return nil, err
			}
			if s.source != nil {
				s.source.middleware = name
			}
			return inFlightFor(name, handlerOf(m), d, s, false)
		}
	}
	m, err := build(next, config, name)
	if err != nil {
		return nil, err
	}
	inFlightFor(name, nil, &Config{}, settings{}, false) // drops name's slots, if any
	return handlerOf(m), nil
}

// build returns the middleware named name in front of next, or the first
// error of config, its option named as the configuration spells it.
func build(next http.Handler, config *Config, name string) (*Middleware, error) {
	if next == nil {
		return nil, fieldError("next", "missing handler")
	}
	if config == nil {
		return nil, fieldError("config", "missing")
	}
	config, err := config.decoded()
	if err != nil {
		return nil, err
	}
	s, err := config.validate()
	if err != nil {
		return nil, err
	}
	if s.redis != nil {
		if err := redisstore.CheckRule(name, s.rule); err != nil {
			return nil, spelling.Error(err)
		}
	}
	z, err := zoneFor(name, s.rule, s.maxKeys, keyScope(s.source), s.ban, s.persist)
	if err != nil {
		return nil, spelling.Error(err)
	}
	store, err := redisStoreFor(name, s.redis)
	if err != nil {
		return nil, err
	}
	if s.source != nil {
		s.source.middleware = name
	}
	table := httplimit.DecimalsFor(s.rule)
	decimals := table
	if decimals == nil {
		decimals = httplimit.Decimals()
	}
	policy := httplimit.NewPolicy(name, s.rule.Window, s.rule.Limit, s.mode)
	m := &Middleware{
		name:        name,
		next:        next,
		source:      s.source,
		v6Bits:      s.v6Bits,
		zone:        z,
		countStatus: s.countStatus,
		overrides:   s.overrides,
		cidrs:       s.overrides != nil && s.overrides.HasCIDRs(),
		policy:      policy,
		headerMode:  s.mode,
		decimals:    decimals,
		tabled:      uint64(len(decimals)),
		ruleLimit:   s.rule.Limit,
		limitStr:    strconv.FormatInt(s.rule.Limit, 10),
		policyStr:   policy.PolicyValue(),
		ratePrefix:  policy.RatePrefix(),
		status:      s.status,
		message:     s.message,
		body:        []byte(s.message),
		lengthStr:   strconv.Itoa(len(s.message)),
		dryRun:      s.dryRun,
		logKey:      s.logKey,
	}
	setSourceKey(m, s.source)
	if store == nil && s.ban > 0 && (s.countStatus != nil || s.overrides != nil) {
		store = ratelimit.Memory{} // TakeAll decides their bans (see ban.go)
	}
	if store != nil {
		useStore(m, store)
		m.refunder, _ = store.(ratelimit.Refunder)
	}
	setPath(m, choosePath(m, s, table != nil))
	// A rate beside inFlight takes its slot and its decision in one call
	// a request (see inFlight), which a lease would not spare.
	m.lease = leaseTableFor(name, z, m.guard, m.keyCall, s.redis != nil && s.redis.lease && s.countStatus == nil && s.ban == 0 && config.InFlight == 0)
	return m, nil
}

// setSourceKey sets what sourceKey reads of src, the source of m's keys
// (nil for the remote address), so that serveRedis keys as the memory
// path does.
func setSourceKey(m *Middleware, src *keySource) {
	if src == nil {
		return
	}
	m.sourced = true
	m.keyKind = src.kind
	m.header = src.header
	if src.kind == sourceIP && src.ip.depth > 0 {
		m.keyKind = sourceDepth
		m.depth = src.ip.depth
	}
	if src.kind == sourceIP && src.ip.excluded != nil {
		m.excluded4 = excludedIPv4(src.ip)
	}
}
