package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

func init() {
	caddy.RegisterModule(adminAPI{})
}

// adminAPI serves /rate_limit/ on Caddy's admin endpoint, behind its
// access controls:
//
//   - GET /rate_limit/ lists the zone states of the loaded configs, with
//     their settings, stores and the number of keys each tracks in memory;
//     GET /rate_limit/<zone> lists those of one name.
//   - GET /rate_limit/<zone>/<key> returns, for every state of that zone
//     name, the key's count, its limit, remaining budget and reset, read
//     without counting anything, and, in Redis, the lease this instance
//     holds on the key, if any. When the key is an address and the
//     zone's key may come out empty, the fallback key of that address,
//     which counts its keyless requests, is reported too.
//   - DELETE /rate_limit/<zone>/<key> forgets the key (and that fallback
//     key) in every state of that zone name, in memory and in Redis, so
//     its next request starts afresh.
//
// The zone name and the key are path segments, path-escaped: a key with a
// slash, such as an IPv6 /64, has it as %2F. The key is the key as the
// zone stores it; a plain IP address is grouped as the zone groups it.
// Keys are never logged by this module.
type adminAPI struct{}

// CaddyModule returns the Caddy module information.
func (adminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.rate_limit",
		New: func() caddy.Module { return new(adminAPI) },
	}
}

const adminPrefix = "/rate_limit/"

// adminTimeout bounds the Redis calls of one admin request.
const adminTimeout = 5 * time.Second

// Routes returns the route of /rate_limit/.
func (a adminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: adminPrefix, Handler: caddy.AdminHandlerFunc(a.serve)},
		{Pattern: adminInFlightPrefix, Handler: caddy.AdminHandlerFunc(a.serveInFlight)},
	}
}

func (adminAPI) serve(w http.ResponseWriter, r *http.Request) error {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), adminPrefix)
	if !ok {
		return apiError(http.StatusNotFound, errors.New("not found"))
	}
	rawZone, rawKey, hasKey := strings.Cut(rest, "/")
	zone, err := url.PathUnescape(rawZone)
	if err != nil {
		return apiError(http.StatusBadRequest, errors.New("the zone name is not path-escaped properly"))
	}
	if strings.Contains(rawKey, "/") {
		// Unambiguous paths: a slash of the key, as in an IPv6 /64, is %2F.
		return apiError(http.StatusBadRequest, errors.New("a slash in the key must be escaped as %2F"))
	}
	key, err := url.PathUnescape(rawKey)
	if err != nil {
		// Not the error's text: it quotes the key.
		return apiError(http.StatusBadRequest, errors.New("the key is not path-escaped properly"))
	}
	if !hasKey || key == "" {
		if r.Method != http.MethodGet {
			return methodNotAllowed(w, http.MethodGet)
		}
		uses := zoneUses(zone)
		if zone != "" && len(uses) == 0 {
			return unknownZone(zone)
		}
		return writeJSON(w, listing{Zones: describeZones(uses)})
	}
	switch r.Method {
	case http.MethodGet, http.MethodDelete:
	default:
		return methodNotAllowed(w, http.MethodGet, http.MethodDelete)
	}
	uses := zoneUses(zone)
	if len(uses) == 0 {
		return unknownZone(zone)
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	if r.Method == http.MethodDelete {
		res, err := forgetKey(ctx, uses, key)
		if err != nil {
			return apiError(http.StatusBadGateway, err)
		}
		return writeJSON(w, keyReport{Zone: zone, States: res})
	}
	res, err := inspectKey(ctx, uses, key, time.Now())
	if err != nil {
		return apiError(http.StatusBadGateway, err)
	}
	return writeJSON(w, keyReport{Zone: zone, States: res})
}

// listing is the answer to GET /rate_limit/.
type listing struct {
	Zones []zoneInfo `json:"zones"`
}

// zoneInfo describes one zone state.
type zoneInfo struct {
	Name          string      `json:"name"`
	ID            uint64      `json:"id"` // ratelimit.ZoneNumber
	Algorithm     string      `json:"algorithm"`
	Window        string      `json:"window"`
	SubWindow     string      `json:"sub_window,omitempty"`
	Limit         int64       `json:"limit"`
	Cost          int64       `json:"cost"`
	Key           []string    `json:"key"`
	Grouping      []grouping  `json:"grouping"`
	MaxKeys       int         `json:"max_keys"`
	SweepInterval string      `json:"sweep_interval,omitempty"`
	Ban           string      `json:"ban,omitempty"`
	Keys          int         `json:"keys"`
	Stores        []storeInfo `json:"stores"`
	// Persist says where the memory zone is saved, and when it was last
	// saved and restored; absent when it is not persisted.
	Persist *persistInfo `json:"persist,omitempty"`
}

// grouping is how a zone groups addresses in keys.
type grouping struct {
	IPv4Prefix int `json:"ipv4_prefix"`
	IPv6Prefix int `json:"ipv6_prefix"`
}

// storeInfo names where a zone is counted.
type storeInfo struct {
	Type      string `json:"type"` // memory or redis
	KeyPrefix string `json:"key_prefix,omitempty"`
}

func describeZones(uses []*zoneUse) []zoneInfo {
	out := make([]zoneInfo, 0, len(uses))
	for _, u := range uses {
		rule := u.zone.Rule()
		info := zoneInfo{
			Name:      u.name,
			ID:        ratelimit.ZoneNumber(u.zone),
			Algorithm: rule.Algorithm.String(),
			Window:    rule.Window.String(),
			Limit:     rule.Limit,
			Cost:      rule.Cost,
			Key:       u.templates,
			MaxKeys:   u.maxKeys,
			Keys:      u.zone.Len(),
			Stores:    stores(u),
			Persist:   persistInfoOf(u.zone),
		}
		if info.MaxKeys == 0 {
			info.MaxKeys = ratelimit.DefaultMaxKeys
		}
		if ban := u.zone.Ban(); ban > 0 {
			info.Ban = ban.String()
		}
		if u.sweepInterval > 0 {
			info.SweepInterval = u.sweepInterval.String()
		}
		if rule.Algorithm != ratelimit.Log && rule.Algorithm != ratelimit.Fixed {
			info.SubWindow = rule.SubWindow.String()
		}
		for _, g := range u.groupings {
			v4 := g.v4
			if v4 == 0 {
				v4 = 32
			}
			info.Grouping = append(info.Grouping, grouping{IPv4Prefix: v4, IPv6Prefix: g.v6})
		}
		out = append(out, info)
	}
	return out
}

func stores(u *zoneUse) []storeInfo {
	var out []storeInfo
	if u.memory {
		out = append(out, storeInfo{Type: "memory"})
	}
	for _, r := range u.redis {
		out = append(out, storeInfo{Type: "redis", KeyPrefix: r.store.KeyPrefix()})
	}
	return out
}

// keyReport is the answer to GET and DELETE /rate_limit/<zone>/<key>: one
// entry per zone state and store.
type keyReport struct {
	Zone   string     `json:"zone"`
	States []keyState `json:"states"`
}

// keyState is a key in one zone state and store.
type keyState struct {
	ID        uint64 `json:"id"` // ratelimit.ZoneNumber
	Store     string `json:"store"`
	KeyPrefix string `json:"key_prefix,omitempty"`
	// Key is the key as the zone holds it.
	Key string `json:"key"`
	// Fallback is set on the key under which the zone counts the requests
	// from the address asked about whose key came out empty (say, no API
	// key): Key is then "\u0000client_ip:" and the address as grouped.
	Fallback bool `json:"fallback,omitempty"`
	// Limit is the key's limit, against which Remaining is computed: an
	// override's when one matches, else the zone's (see LimitSource).
	Limit int64 `json:"limit"`
	// ZoneLimit is the zone's own limit.
	ZoneLimit int64 `json:"zone_limit"`
	// LimitSource says where Limit comes from: "zone", "override" (of the
	// key, or of a CIDR holding the address asked about), "tier" (a limit
	// placeholder, which only a request knows: Limit is the zone's
	// fallback) or "varies" (handlers sharing the zone disagree: Limit is
	// the zone's).
	LimitSource string `json:"limit_source"`
	// Unlimited is set when an override exempts the key: the zone neither
	// counts nor limits it.
	Unlimited bool `json:"unlimited,omitempty"`
	// Note explains what the answer cannot show: a limit only a request
	// knows, or, after a DELETE, what the reset starts.
	Note string `json:"note,omitempty"`
	// Tracked reports whether the store held state for the key.
	Tracked bool `json:"tracked"`
	// Count, Remaining and Reset (seconds, rounded up) are left out of
	// the answer to DELETE; Remaining of an unlimited key too.
	Count     *int64 `json:"count,omitempty"`
	Remaining *int64 `json:"remaining,omitempty"`
	Reset     *int64 `json:"reset,omitempty"`
	// Lease is the lease this instance holds on the key in Redis, when it
	// holds one: units counted in Redis (in Count) that it has not spent
	// yet. It is left out of the answer to DELETE.
	Lease *leaseState `json:"lease,omitempty"`
	// BannedUntil, in a zone with a ban, is when the key's ban ends (RFC
	// 3339, UTC); absent when it is not banned, and from the answer to
	// DELETE, which lifts it.
	BannedUntil string `json:"banned_until,omitempty"`
}

// leaseState is what this instance holds of a key's lease.
type leaseState struct {
	// Units is how many units of the lease are unspent.
	Units int64 `json:"units"`
	// ExpiresIn is how long they may still be spent, rounded up to the
	// millisecond ("40ms"): at most to the end of the sub-window they are
	// counted in. Then what is left is given back.
	ExpiresIn string `json:"expires_in"`
}

// leaseOf returns what tables, the lease tables of one zone state on one
// store, hold of key's lease: with several handlers sharing the zone,
// the units of all of them and the longest time left.
func leaseOf(tables []*lease.Table, key string) *leaseState {
	var units int64
	var left time.Duration
	for _, t := range tables {
		if held, ok := t.Inspect(key); ok {
			units += held.Units
			left = max(left, held.ExpiresIn)
		}
	}
	if units == 0 {
		return nil
	}
	left = (left + time.Millisecond - 1).Truncate(time.Millisecond)
	return &leaseState{Units: units, ExpiresIn: left.String()}
}

// newKeyState describes the key of l in u's zone state, store store.
func newKeyState(u *zoneUse, store, prefix string, l lookup) keyState {
	kl := u.limitOf(l)
	return keyState{
		ID: ratelimit.ZoneNumber(u.zone), Store: store, KeyPrefix: prefix, Key: l.key, Fallback: l.fallback,
		Limit: kl.limit, ZoneLimit: u.zone.Rule().Limit, LimitSource: kl.source, Unlimited: kl.unlimited, Note: kl.note,
	}
}

// stateOf is newKeyState with what the store holds, st.
func stateOf(u *zoneUse, store, prefix string, l lookup, st ratelimit.KeyState) keyState {
	ks := newKeyState(u, store, prefix, l)
	reset := httplimit.CeilSeconds(st.ResetAfter)
	ks.Tracked, ks.Count, ks.Reset = st.Tracked, &st.Count, &reset
	if !ks.Unlimited {
		remaining := max(ks.Limit-st.Count, 0)
		ks.Remaining = &remaining
	}
	return ks
}

// inspectKey reads key in every zone state of uses and every store that
// counts it.
func inspectKey(ctx context.Context, uses []*zoneUse, key string, now time.Time) ([]keyState, error) {
	var out []keyState
	for _, u := range uses {
		for _, l := range u.lookups(key) {
			if u.memory {
				st := u.zone.Inspect(l.key, now)
				out = append(out, withBan(stateOf(u, "memory", "", l, st), st, now))
			}
			for _, r := range u.redis {
				st, err := r.store.Inspect(ctx, u.zone, l.key, now)
				if err != nil {
					return nil, fmt.Errorf("zone %q: reading the key in redis: %w", u.name, err)
				}
				ks := withBan(stateOf(u, "redis", r.store.KeyPrefix(), l, st), st, now)
				ks.Lease = leaseOf(r.leases, l.key)
				out = append(out, ks)
			}
		}
	}
	return out, nil
}

// forgetKey forgets key in every zone state of uses: its in-memory state
// (which also serves on_store_error local), its Redis key in every store
// that counts it, and the guards' cached denials.
func forgetKey(ctx context.Context, uses []*zoneUse, key string) ([]keyState, error) {
	var out []keyState
	var errs []error
	for _, u := range uses {
		for _, l := range u.lookups(key) {
			k := l.key
			// Always: the memory state also serves on_store_error local.
			if tracked := u.zone.Forget(k); u.memory || tracked {
				st := newKeyState(u, "memory", "", l)
				st.Tracked = tracked
				st.Note = resetMemory
				out = append(out, st)
			}
			for _, r := range u.redis {
				// This instance's leases first: they end unspent, and the
				// reset does not keep them in the fresh count (it does keep
				// what other instances' leases may still spend).
				var own int64
				for _, t := range r.leases {
					own += t.Forget(k)
				}
				deleted, err := r.store.Forget(ctx, u.zone, k, time.Now(), own)
				if err != nil {
					errs = append(errs, fmt.Errorf("zone %q: deleting the key in redis: %w", u.name, err))
				}
				if r.guard != nil {
					r.guard.ForgetDenial(u.zone, k)
				}
				st := newKeyState(u, "redis", r.store.KeyPrefix(), l)
				st.Tracked = deleted
				st.Note = resetRedis
				out = append(out, st)
			}
		}
	}
	return out, errors.Join(errs...)
}

// What a DELETE's reset starts, in the answer's notes.
const (
	resetMemory = "reset: the next request starts one fresh budget; a count_status request in flight keeps its count, which no refund takes from the fresh one"
	resetRedis  = "reset on every instance: the next request starts one fresh budget, which counts the units other instances still hold in leases of the key, so the window after the reset admits at most the limit; a count_status request in flight keeps its count, which no refund takes from the fresh one"
)

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}

func apiError(status int, err error) error {
	return caddy.APIError{HTTPStatus: status, Err: err}
}

func unknownZone(zone string) error {
	return apiError(http.StatusNotFound, fmt.Errorf("unknown zone %q", zone))
}

func methodNotAllowed(w http.ResponseWriter, allow ...string) error {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	return apiError(http.StatusMethodNotAllowed, errors.New("method not allowed"))
}

// Interface guards
var _ caddy.AdminRouter = adminAPI{}
