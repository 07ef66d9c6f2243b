package caddymodule

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/inflight"
	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Zone is one rate limit: at most Limit requests per Window for each
// distinct value of Key.
type Zone struct {
	// MatcherSetsRaw selects the requests the zone applies to: a request is
	// limited by the zone if it matches any of the matcher sets. Without
	// matchers the zone applies to every request the handler sees.
	MatcherSetsRaw caddyhttp.RawMatcherSets `json:"match,omitempty" caddy:"namespace=http.matchers"`

	// Key tells requests apart: each distinct value after placeholder
	// replacement has its own count. The default is
	// "{http.vars.client_ip}", the client IP (which honours the server's
	// trusted_proxies). A static key without placeholders gives the whole
	// zone one shared count. A key that is empty after replacement (a
	// missing header, say) falls back to the client IP, counted apart from
	// the keys that are present, so a missing value never escapes the
	// limit. Keys longer than 256 bytes are replaced by their SHA-256.
	Key string `json:"key,omitempty"`

	// Window is the length of the sliding window the limit applies to.
	// It is required.
	Window caddy.Duration `json:"window,omitempty"`

	// SubWindow is the resolution of the counters: the window is split in
	// Window/SubWindow sub-windows, at most 128. It must divide Window.
	// The default is Window/10. It does not apply to the fixed and log
	// algorithms.
	SubWindow caddy.Duration `json:"sub_window,omitempty"`

	// Limit is the most requests admitted per window and key. It is
	// required (or MaxEvents).
	Limit int64 `json:"limit,omitempty"`

	// LimitPlaceholder, when set, takes each request's limit from a
	// placeholder, such as "{plan_limit}" set by the map directive, so
	// that tiers come from the request: the placeholder is read per
	// request after the key's overrides. A value that is not a whole
	// number from the zone's cost to its algorithm's maximum (1024 for
	// log) never lifts the limit: the request gets Limit, the fallback,
	// which then defaults to the cost (1), and a warning is logged at
	// most once a minute. Window, sub-window and algorithm stay static.
	LimitPlaceholder string `json:"limit_placeholder,omitempty"`

	// Overrides give the requests of some keys or client IPs a limit of
	// their own, or exempt them ("unlimited": neither counted nor limited,
	// no headers from the zone). An override of the request's key applies
	// first; then that of the narrowest CIDR holding the client IP, as
	// Caddy determined it (trusted_proxies honoured), whatever the key. A
	// CIDR never matches the key, which the client may choose. A key's
	// count does not depend on its limit.
	Overrides []Override `json:"overrides,omitempty"`

	// MaxEvents is caddy-ratelimit's name for Limit, accepted so that its
	// JSON configs load unchanged. Set one of the two.
	MaxEvents int64 `json:"max_events,omitempty"`

	// Algorithm is how requests are counted: "sliding" (the default)
	// weights the sub-window leaving the window by the part of it still
	// inside; "strict" counts that sub-window whole and so never admits
	// more than Limit in any interval of length Window; "fixed" counts in
	// windows aligned to multiples of Window; "log" keeps the time of
	// every admitted request: exact, for small limits (at most 1024) such
	// as login attempts.
	Algorithm string `json:"algorithm,omitempty"`

	// Cost is what one request consumes of the limit. The default is 1.
	Cost int64 `json:"cost,omitempty"`

	// IPv4Prefix, when the key is an IPv4 address, groups it by this many
	// leading bits: with 24, every address of a /24 shares one count.
	// 0 (the default) or 32 keeps addresses apart.
	IPv4Prefix int `json:"ipv4_prefix,omitempty"`

	// IPv6Prefix, when the key is an IPv6 address, groups it by this many
	// leading bits: with 48, every address of a /48 shares one count. The
	// default (0 or unset) is 64, because every IPv6 site is assigned at
	// least a /64 and a client could otherwise take a fresh count from
	// each of its addresses. 128 keeps addresses apart. It applies to the
	// default key, to any key that is an IPv6 address, and to the client
	// IP an empty key falls back to. An IPv4-mapped IPv6 address is
	// treated as IPv4.
	IPv6Prefix int `json:"ipv6_prefix,omitempty"`

	// CountStatus makes the zone count responses instead of requests: a
	// request is checked first (a key with no room left for one more is
	// rejected with 429 without reaching the next handler), and counted
	// only if its response's status is listed here. Each entry is a status
	// code (100-599) or, as a single digit, a class (5 for 5xx), as
	// Caddy's response matchers write them. Responses of this handler's
	// own 429s are never counted. The classic use is failed logins: 401.
	CountStatus []int `json:"count_status,omitempty"`

	// InFlight, when set, holds at most this many requests of each key
	// running at once: a request takes a slot when it is admitted and
	// frees it when its response is done (completed, the client gone, a
	// stream reset, a panic, a timeout); one more is refused with 429 and
	// Retry-After 1. Alone in a zone (no window, no limit) it is a pure
	// concurrency limit; beside window and limit both apply, and a request
	// refused by one takes nothing from the other. With store redis the
	// slots of a key are one set for every instance; in memory they are
	// this instance's.
	InFlight int64 `json:"in_flight,omitempty"`

	// InFlightTTL is how long a slot in Redis stays taken when the
	// instance holding it stops renewing it (killed, cut off from Redis):
	// each instance renews its slots every third of it while their
	// requests run. The default is 30s; at least 1s. It applies only with
	// in_flight and store redis.
	InFlightTTL caddy.Duration `json:"in_flight_ttl,omitempty"`

	// Ban, when set, refuses a key that reaches its limit for this long,
	// from the request its window first refuses, even once the window
	// would admit it again: "5 failed logins in 15 minutes, then nothing
	// for an hour". Retry-After and the reset headers then give the
	// ban's end. With count_status, the request that finds the counted
	// responses (and those in flight) at the limit starts it. With Redis
	// one ban holds for every instance; an admin API DELETE lifts it.
	// It needs Window and Limit.
	Ban caddy.Duration `json:"ban,omitempty"`
}

// rule returns the zone's normalized rule, or the first bad value. A
// zone of in_flight alone has none: its rule is the zero Rule.
func (z *Zone) rule() (ratelimit.Rule, error) {
	if err := z.checkInFlight(); err != nil {
		return ratelimit.Rule{}, err
	}
	if z.inFlightOnly() {
		return ratelimit.Rule{}, nil
	}
	limit := z.Limit
	switch {
	case z.MaxEvents != 0 && z.Limit != 0:
		return ratelimit.Rule{}, fmt.Errorf("limit and max_events are the same setting: set one")
	case z.MaxEvents != 0:
		limit = z.MaxEvents
	}
	if z.Window == 0 {
		return ratelimit.Rule{}, fmt.Errorf("window is required")
	}
	if limit == 0 && z.LimitPlaceholder != "" {
		// The fallback of a bad placeholder value: the least limit a
		// request of the zone's cost can pass.
		limit = max(z.Cost, 1)
	}
	if limit == 0 {
		return ratelimit.Rule{}, fmt.Errorf("limit is required")
	}
	if _, err := z.limitPlaceholder(); err != nil {
		return ratelimit.Rule{}, err
	}
	alg, err := ratelimit.ParseAlgorithm(z.Algorithm)
	if err != nil {
		return ratelimit.Rule{}, err
	}
	r := ratelimit.Rule{
		Window:    time.Duration(z.Window),
		SubWindow: time.Duration(z.SubWindow),
		Limit:     limit,
		Algorithm: alg,
		Cost:      z.Cost,
	}
	if err := r.Normalize(); err != nil {
		return ratelimit.Rule{}, spelling.Error(err)
	}
	if _, err := z.overrides(r); err != nil {
		return ratelimit.Rule{}, err
	}
	if err := httplimit.ValidatePrefixBits("ipv4_prefix", z.IPv4Prefix, 32); err != nil {
		return ratelimit.Rule{}, err
	}
	if err := httplimit.ValidatePrefixBits("ipv6_prefix", z.IPv6Prefix, 128); err != nil {
		return ratelimit.Rule{}, err
	}
	return r, nil
}

// zoneState is a provisioned zone: its shared state and what the
// per-request path needs, computed once.
type zoneState struct {
	name      string
	zone      *ratelimit.Zone
	matchers  caddyhttp.MatcherSets
	key       keySource
	policy    *httplimit.Policy
	rejection caddyhttp.HandlerError // built once; Error adds the ID
	// countStatus, when set, holds the statuses whose responses the zone
	// counts: its requests are checked, and charged after the response.
	countStatus *httplimit.StatusSet
	// overrides, when set, give some keys their own limit (see limitOf);
	// limitFrom names the placeholder of a per-request limit.
	overrides    *ratelimit.Overrides
	limitFrom    string
	lastBadLimit atomic.Int64 // unix nanoseconds of the last warning
	lastProxyHop atomic.Int64 // the same, about a proxy as the client
	// lease, when set, holds this handler's leases on the zone's keys in
	// Redis (store redis with lease auto, no count_status): a request
	// checked against this zone alone is decided through it.
	lease *lease.Table
	// inflight, when set, holds the zone's in-flight slots (in_flight):
	// at most inflightN requests of a key at once; inflightPolicy
	// writes their headers.
	inflight       *inflight.Limiter
	inflightN      int64
	inflightPolicy *httplimit.Policy

	allowed, denied, dryRun prometheus.Counter

	// Sampled info logging of rejections (see logDenial).
	lastInfo   atomic.Int64 // unix nanoseconds of the last info line
	suppressed atomic.Int64 // rejections not logged at info since then
}
