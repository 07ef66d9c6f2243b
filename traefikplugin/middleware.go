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
// Performance under yaegi).
type Middleware struct {
	// lastDryRunLog is the Unix second of the last dry-run log line.
	lastDryRunLog int64
	// lastRejectLog is the Unix second of the last rejection line, and
	// rejectsSuppressed counts the rejections since then that got none.
	lastRejectLog     int64
	rejectsSuppressed int64

	name string
	next http.Handler
	zone *ratelimit.Zone
	// store, when set, takes the decisions instead of zone (a remote
	// store); nil keeps the in-memory zone.
	store ratelimit.Store
	// guard is store when it is a *guard.Guard (Redis), called as a
	// plain function on the common request (see takeFromStore).
	guard *guard.Guard
	// keyCall is the Redis store's call prepared for zone, which
	// guard.TakeKey makes on the common request; nil when it has none.
	keyCall *ratelimit.KeyCall
	// source is nil for the default source, the remote address, whose
	// IPv6 addresses are grouped by v6Bits.
	source *keySource
	v6Bits int
	policy *httplimit.Policy
	// notMemoryPath is set when ServeHTTP's own body, the memory path,
	// does not serve m: a store, countStatus or overrides (see setPaths and
	// the paths' table in serve.go).
	notMemoryPath bool
	// redisInline is set when serveRedis serves m: Redis through guard,
	// any source, legacy headers from the table, no dry run (see
	// useStore).
	redisInline bool
	// legacyTable is set when ServeHTTP writes legacy headers from
	// decimals; otherwise decidedModeHeaders writes those of headerMode.
	legacyTable bool
	headerMode  httplimit.HeaderMode
	// keyKind and depth are the source's kind and ipStrategy.depth, for
	// sourceKey.
	keyKind sourceKind
	depth   int
	// excluded4 holds the IPv4 ranges of ipStrategy.excludedIPs for
	// excludedKey, as pairs of masked address and mask.
	excluded4 []uint32
	// policyStr and ratePrefix are the RateLimit-Policy value and the
	// start of the RateLimit value (see httplimit.Policy).
	policyStr  string
	ratePrefix string
	// decimals is the header values table every path writes from; the
	// values past it are formatted (see decimal).
	decimals []string
	// ruleLimit is the rule's limit, and limitStr its X-RateLimit-Limit
	// value.
	ruleLimit int64
	limitStr  string
	// body and lengthStr are the rejection's body and Content-Length.
	body      []byte
	lengthStr string
	dryRun    bool
	logKey    bool
	status    int
	message   string
	// countStatus, when set, holds the statuses of the responses counted:
	// requests are reserved, then refunded unless their status is listed
	// (see serveCounted).
	countStatus *ratelimit.StatusSet
	// overrides, when set, give some keys or client addresses their own
	// limit or exempt them (see serveOverridden). cidrs is set when
	// some override is a CIDR: only then is the client address parsed.
	overrides *ratelimit.Overrides
	cidrs     bool
	// refunder gives back m.store's reservations; nil for the in-memory
	// zone.
	refunder ratelimit.Refunder
	// lease, when set, decides Redis requests, spending hot keys' leases
	// locally (redis.lease auto, no countStatus; see leaseTableFor).
	lease *lease.Table
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
			return inFlightFor(name, m, d, s, false)
		}
	}
	m, err := build(next, config, name)
	if err != nil {
		return nil, err
	}
	inFlightFor(name, nil, &Config{}, settings{}, false) // drops name's slots, if any
	return m, nil
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
	m := &Middleware{
		name:   name,
		next:   next,
		zone:   z,
		source: s.source,
		v6Bits: s.v6Bits,
		policy: httplimit.NewPolicy(name, s.rule.Window, s.rule.Limit, s.mode),
		// Until setPaths, set unless serveRedis could serve m (legacy
		// headers from the table, no dry run), for useStore.
		notMemoryPath: s.mode != httplimit.HeadersLegacy || s.dryRun || table == nil || s.countStatus != nil || s.overrides != nil,
		decimals:      table,
		ruleLimit:     s.rule.Limit,
		limitStr:      strconv.FormatInt(s.rule.Limit, 10),
		body:          []byte(s.message),
		lengthStr:     strconv.Itoa(len(s.message)),
		dryRun:        s.dryRun,
		logKey:        s.logKey,
		status:        s.status,
		message:       s.message,

		countStatus: s.countStatus,
		overrides:   s.overrides,
		cidrs:       s.overrides != nil && s.overrides.HasCIDRs(),
	}
	if store == nil && s.ban > 0 && (s.countStatus != nil || s.overrides != nil) {
		store = ratelimit.Memory{} // TakeAll decides their bans (see ban.go)
	}
	if store != nil {
		useStore(m, store)
		m.refunder, _ = store.(ratelimit.Refunder)
	}
	setPaths(m, s)
	if s.ban > 0 && m.store == nil {
		m.notMemoryPath = true // serveAny decides with TakeBanAt (see ban.go)
	}
	// A rate beside inFlight takes its slot and its decision in one call
	// a request (see inFlight), which a lease would not spare.
	m.lease = leaseTableFor(name, z, m.guard, m.keyCall, s.redis != nil && s.redis.lease && s.countStatus == nil && s.ban == 0 && config.InFlight == 0)
	return m, nil
}

// setPaths sets the header tables of m, whose settings are s, and chooses
// the memory path when m needs no more than the in-memory zone: any
// source, header mode, limit, window and dry run. countStatus, overrides
// and stores stay in serveAny, which writes the headers of a decision
// under the rule's limit from the same tables (allowedHeaders).
func setPaths(m *Middleware, s settings) {
	m.legacyTable = s.mode == httplimit.HeadersLegacy && m.decimals != nil
	if m.decimals == nil {
		m.decimals = httplimit.Decimals()
	}
	m.headerMode = s.mode
	m.policyStr = m.policy.PolicyValue()
	m.ratePrefix = m.policy.RatePrefix()
	// sourceKey's settings: serveRedis keys as the memory path does.
	if src := s.source; src != nil {
		m.keyKind = src.kind
		if src.kind == sourceIP && src.ip.depth > 0 {
			m.depth = src.ip.depth
		}
		if src.kind == sourceIP && src.ip.excluded != nil {
			m.excluded4 = excludedIPv4(src.ip)
		}
	}
	if m.store != nil || m.countStatus != nil || m.overrides != nil {
		return
	}
	m.notMemoryPath = false
}
