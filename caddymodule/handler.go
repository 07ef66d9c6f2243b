package caddymodule

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/lease"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler limits the rate of requests with sliding windows.
//
// Each zone is one limit: at most `limit` requests per `window` for each
// distinct value of the zone's key (by default the client IP). A request is
// checked against every zone whose matchers it matches, and it is counted
// in those zones only if all of them allow it, so a request rejected by one
// zone does not use up another zone's budget.
//
// A rejected request gets the rate-limit headers and Retry-After, and the
// handler returns an HTTP error with status 429, so `handle_errors` routes
// can shape the response. These placeholders are set when a request is
// rejected (or would be, in dry-run mode):
//
//   - `{http.rate_limit.zone}`: the name of the zone that rejected it;
//   - `{http.rate_limit.exceeded.name}`: the same, under caddy-ratelimit's name;
//   - `{http.rate_limit.retry_after}`: seconds until a retry can pass (rounded up);
//   - `{http.rate_limit.limit}`: the limit that applied (the zone's, or the key's override or tier);
//   - `{http.rate_limit.reset}`: seconds until the zone's window is empty for this key.
//
// Zone state lives in memory and survives config reloads for every zone
// whose name and settings are unchanged; with Redis, the counts live in
// Redis and memory only serves on_store_error local.
type Handler struct {
	// RateLimits holds the zones, keyed by zone name. The name appears in
	// logs, metrics, the IETF RateLimit headers and the placeholders.
	// Zones of the same name and settings in several handlers share their
	// counts.
	RateLimits map[string]*Zone `json:"rate_limits,omitempty"`

	// Headers selects the rate-limit headers on responses: "legacy" (the
	// default) writes X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset; "ietf" writes RateLimit-Policy and RateLimit from
	// the IETF draft; "both" writes both sets; "none" writes neither.
	// Retry-After is sent on every rejection whatever the mode. When a
	// request matches several zones, the headers describe the zone that
	// constrains it most.
	Headers string `json:"headers,omitempty"`

	// MaxKeys bounds how many keys each zone tracks in memory. When a zone
	// is full, a new key evicts, of a small sample, a key whose window
	// counts nothing, else the one with the smallest count; what an evicted
	// key still counted is kept in a fixed-size summary, so it comes back
	// with at least that count, never with a fresh budget. The default is
	// 100000 (about 11 MB per zone, and about 6 MB more for the summary
	// once the zone has been full).
	MaxKeys int `json:"max_keys,omitempty"`

	// SweepInterval is how often each zone deletes the keys whose window
	// is empty. The default is the zone's window, clamped to between one
	// second and one minute.
	SweepInterval caddy.Duration `json:"sweep_interval,omitempty"`

	// Jitter adds a random delay of up to this fraction of Retry-After to
	// rejected responses (0.2 adds up to 20%), so that rejected clients do
	// not all come back at the same moment. It is at most 1; the default is
	// 0.
	Jitter float64 `json:"jitter,omitempty"`

	// DryRun takes every decision, counts it, sets the headers and the
	// placeholders, and logs and measures rejections, but lets every
	// request through. Use it to try limits on live traffic.
	DryRun bool `json:"dry_run,omitempty"`

	// LogKey adds the request's key to the log lines about rejections.
	// It is off by default because keys may hold API keys or other
	// personal data.
	LogKey bool `json:"log_key,omitempty"`

	// Redis, when set, keeps the counts in Redis instead of this
	// instance's memory, so that every Caddy instance using the same Redis
	// and zone names enforces one limit together. Keys in Redis are
	// <key_prefix><zone>:{<key>}.
	Redis *RedisConfig `json:"redis,omitempty"`

	// OnStoreError says how requests are decided while Redis fails or is
	// unreachable: "allow" (the default) admits them, "deny" rejects them
	// with Retry-After 1, "local" decides them with this instance's
	// in-memory zones. It requires Redis.
	OnStoreError string `json:"on_store_error,omitempty"`

	// Persist says whether and where memory zones are saved, so that their
	// counts survive a restart. Unset, they are saved every 10s, and when
	// released for good, into Caddy's data directory; {"off": true}
	// disables it. Zones counted in Redis are not saved.
	Persist *Persist `json:"persist,omitempty"`

	// storeGiven is set by a store subdirective in the Caddyfile, even
	// store memory: the global option's store then does not apply.
	storeGiven bool

	zones []*zoneState // sorted by name, so decisions are deterministic
	// keysNeedReplacer is set when a zone's key has placeholders other
	// than the client IP; otherwise an allowed request never looks the
	// replacer up.
	keysNeedReplacer bool
	// proxies, when the handler's server trusts proxies and a zone has a
	// CIDR override, holds the trusted ranges: an override that lifts
	// the limit never applies to a proxy Caddy reported as the client
	// (see limitOf).
	proxies  *trustedProxies
	store    ratelimit.Store
	logger   *zap.Logger
	acquired []string // zone pool keys held by this handler
	// inflightKeys are the in-flight limiters' pool keys held by this
	// handler (inflight.go).
	inflightKeys []string
	redisKey     string // redis pool key held by this handler, if any
	scratch      *sync.Pool
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.rate_limit",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision sets up the zones, reusing the state of unchanged zones from
// the previous config.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	h.store = ratelimit.Memory{}

	if len(h.RateLimits) == 0 {
		return errors.New("no zone defined: add at least one zone")
	}
	mode, err := httplimit.ParseHeaderMode(h.Headers)
	if err != nil {
		return err
	}
	if h.MaxKeys < 0 {
		return fmt.Errorf("max_keys must not be negative, got %d", h.MaxKeys)
	}
	if h.SweepInterval < 0 {
		return fmt.Errorf("sweep_interval must not be negative, got %v", time.Duration(h.SweepInterval))
	}
	if h.SweepInterval > 0 && time.Duration(h.SweepInterval) < ratelimit.MinSweepInterval {
		return fmt.Errorf("sweep_interval %v is too short (at least %v)", time.Duration(h.SweepInterval), ratelimit.MinSweepInterval)
	}
	var redisSetup *redisSetup
	if h.Redis != nil {
		policy, err := guard.ParseFailurePolicy(h.OnStoreError)
		if err != nil {
			return fmt.Errorf("on_store_error: %w", err)
		}
		if redisSetup, err = h.Redis.resolve(policy); err != nil {
			return fmt.Errorf("store redis: %w", err)
		}
	} else if h.OnStoreError != "" {
		return errors.New("on_store_error applies only to the Redis store: add store redis { ... } or remove it")
	}
	counters, err := registerMetrics(ctx.GetMetricsRegistry())
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	opts := ratelimit.Options{MaxKeys: h.MaxKeys, SweepInterval: time.Duration(h.SweepInterval)}
	persist, err := h.Persist.plan(h.Redis == nil || h.OnStoreError == "local")
	if err != nil {
		return err
	}

	for _, name := range slices.Sorted(maps.Keys(h.RateLimits)) {
		z, err := h.provisionZone(ctx, name, h.RateLimits[name], opts, persist, mode, counters)
		if err != nil {
			return fmt.Errorf("zone %q: %w", name, err)
		}
		h.zones = append(h.zones, z)
		h.keysNeedReplacer = h.keysNeedReplacer || z.key.needsReplacer() || z.limitFrom != ""
	}
	if redisSetup != nil {
		for _, z := range h.zones {
			if z.zone == nil {
				continue // in_flight alone
			}
			if err := redisstore.CheckRule(z.name, z.zone.Rule()); err != nil {
				return fmt.Errorf("store redis: zone %q: %w", z.name, spelling.Error(err))
			}
		}
		key, pooled, err := acquirePooledRedis(redisSetup, caddy.Log().Named("http.handlers.rate_limit"))
		if err != nil {
			return fmt.Errorf("store redis: %w", err)
		}
		h.redisKey = key
		h.store = pooled.guard
		if h.Redis.leases() {
			if err := h.provisionLeases(pooled); err != nil {
				return fmt.Errorf("store redis: %w", err)
			}
		}
		if err := h.provisionInFlight(mode, pooled, key, redisSetup.prefix, redisSetup.policy); err != nil {
			return err
		}
	} else if err := h.provisionInFlight(mode, nil, "", "", 0); err != nil {
		return err
	}

	n := len(h.zones)
	h.scratch = &sync.Pool{New: func() any {
		return &scratch{
			items: make([]ratelimit.Item, 0, n),
			out:   make([]ratelimit.Decision, n),
			which: make([]int, 0, n),
			slots: make([]slotWanted, 0, n),
		}
	}}
	h.warnSpoofableClientIP(ctx)
	h.provisionProxies(ctx)
	trackHandler(h) // for the admin API (admin.go)
	return nil
}

// provisionLeases gives each zone that may lease a table of leases
// through p's guard. A count_status zone never leases: its requests are
// reserved, then refunded or kept after the response, each on its own
// call. A log zone gets a table that never asks for units (Redis grants a
// log rule none), so its requests are decided per request too. A request
// that asks for no lease makes the store's call prepared for its zone.
func (h *Handler) provisionLeases(p *pooledRedis) error {
	for _, z := range h.zones {
		if z.countStatus != nil || z.zone == nil || z.zone.Ban() > 0 || h.RateLimits[z.name].InFlight > 0 {
			// A zone with a ban decides per request (see docs/redis.md); one
			// with in_flight takes its slot and its rate in one call per
			// request, which a lease would not spare; one of in_flight
			// alone has no rate to lease.
			continue
		}
		t, err := lease.NewTable(z.zone, p.guard, lease.Options{KeyCall: p.keyCall(z.zone)})
		if err != nil {
			return fmt.Errorf("zone %q: leases: %w", z.name, err)
		}
		z.lease = t
		trackLeases(z.name, t)
	}
	return nil
}

// provisionZone builds the runtime of one zone and takes its state from
// the pool.
func (h *Handler) provisionZone(ctx caddy.Context, name string, cfg *Zone, opts ratelimit.Options, persist *persistPlan, mode httplimit.HeaderMode, counters *requestCounters) (*zoneState, error) {
	if name == "" {
		return nil, errors.New("zone name must not be empty")
	}
	if cfg == nil {
		return nil, errors.New("zone has no settings")
	}
	if err := cfg.checkBan(); err != nil {
		return nil, err
	}
	rule, err := cfg.rule()
	if err != nil {
		return nil, err
	}
	if cfg.inFlightOnly() {
		return h.provisionInFlightOnly(ctx, name, cfg, counters)
	}
	z := &zoneState{
		name:   name,
		key:    newKeySource(cfg.Key, cfg.IPv4Prefix, cfg.IPv6Prefix),
		policy: httplimit.NewPolicy(name, rule.Window, rule.Limit, mode),
		rejection: caddyhttp.HandlerError{
			Err:        fmt.Errorf("rate limit of zone %q exceeded", name),
			StatusCode: http.StatusTooManyRequests,
			// A fixed trace: caddyhttp.Error would walk the stack on
			// every rejection, which doubles the cost of a flood.
			Trace: "rate_limit (zone " + name + ")",
		},
	}
	if z.overrides, err = cfg.overrides(rule); err != nil {
		return nil, err
	}
	if z.limitFrom, err = cfg.limitPlaceholder(); err != nil {
		return nil, err
	}
	if cfg.CountStatus != nil {
		if z.countStatus, err = httplimit.ParseStatusCodes(cfg.CountStatus); err != nil {
			return nil, err
		}
	}
	counters.bind(z)
	if len(cfg.MatcherSetsRaw) > 0 {
		sets, err := ctx.LoadModule(cfg, "MatcherSetsRaw")
		if err != nil {
			return nil, fmt.Errorf("loading matchers: %w", err)
		}
		if err := z.matchers.FromInterface(sets); err != nil {
			return nil, err
		}
	}
	opts.Scope = z.key.scope()
	opts.Ban = time.Duration(cfg.Ban)
	// The config load's metrics registry tells it apart: every module of
	// one load shares it, and each load makes its own.
	poolKey, zone, err := acquireZone(name, rule, opts, persist, ctx.GetMetricsRegistry())
	if err != nil {
		return nil, err
	}
	h.acquired = append(h.acquired, poolKey)
	z.zone = zone
	return z, nil
}

// Validate checks the settings Provision does not need.
func (h *Handler) Validate() error {
	// At most 1 (100%): a Retry-After more than doubled helps no one, and
	// a huge fraction would overflow the delay.
	if math.IsNaN(h.Jitter) || math.IsInf(h.Jitter, 0) || h.Jitter < 0 || h.Jitter > 1 {
		return fmt.Errorf("jitter must be a fraction from 0 to 1, got %v", h.Jitter)
	}
	return nil
}

// Cleanup releases the handler's zones. A zone's state is dropped, and its
// sweeper stopped, when no loaded config uses it any more.
func (h *Handler) Cleanup() error {
	untrackHandler(h)
	// Before the zones and the Redis client go: closing a table gives
	// back, through the client, what its leases left unspent.
	for _, z := range h.zones {
		if z.lease != nil {
			z.lease.Close()
			retireLeases(z.lease)
		}
	}
	var errs []error
	if err := h.releaseInFlight(); err != nil {
		errs = append(errs, err)
	}
	for _, key := range h.acquired {
		if err := releaseZone(key); err != nil {
			errs = append(errs, err)
		}
	}
	h.acquired = nil
	if h.redisKey != "" {
		if err := releaseRedis(h.redisKey); err != nil {
			errs = append(errs, err)
		}
		h.redisKey = ""
	}
	return errors.Join(errs...)
}

// scratch holds one request's per-zone slices, pooled so that the
// per-request path does not allocate them.
type scratch struct {
	items []ratelimit.Item
	out   []ratelimit.Decision
	which []int // index in h.zones of each item
	// refundable is set when an item is a count_status zone's
	// reservation.
	refundable bool
	// slots are the in-flight slots the request needs (inflight.go).
	slots []slotWanted
}

// ServeHTTP checks r against the matching zones and either passes it on or
// returns a 429 error: it collects the items of the zones r matches, then
// decides them (decide), which serves or rejects r (reject).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	s := h.scratch.Get().(*scratch)
	var repl *caddy.Replacer
	if h.keysNeedReplacer {
		repl, _ = r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	}
	if err := h.collect(r, s, repl); err != nil {
		h.release(s)
		return caddyhttp.Error(http.StatusInternalServerError, err)
	}
	if len(s.slots) > 0 {
		return h.serveInFlight(w, r, next, s, repl)
	}
	if len(s.items) == 0 {
		h.release(s)
		return next.ServeHTTP(w, r)
	}
	return h.decide(w, r, next, s, repl, time.Now())
}

// collect adds to s an item for each zone r matches, with r's key and the
// limit of its override, and the in-flight slots r needs. A zone whose
// override exempts the key adds nothing. The error is a matcher's.
func (h *Handler) collect(r *http.Request, s *scratch, repl *caddy.Replacer) error {
	var client netip.Addr // parsed by the first zone with a CIDR override
	for i, z := range h.zones {
		if len(z.matchers) > 0 {
			match, err := z.matchers.AnyMatchWithError(r)
			if err != nil {
				return err
			}
			if !match {
				continue
			}
		}
		refundable := z.countStatus != nil
		key := z.key.of(r, repl)
		var limit int64
		if z.overrides != nil || z.limitFrom != "" {
			if limit = h.limitOf(z, r, key, &client, repl); limit == ratelimit.Unlimited {
				continue // exempt: neither counted nor limited
			}
		}
		if z.inflight != nil {
			s.slots = append(s.slots, slotWanted{zone: i, key: key})
			if z.zone == nil {
				continue // in_flight alone: no rate
			}
		}
		s.items = append(s.items, ratelimit.Item{Zone: z.zone, Key: key, Refundable: refundable, Limit: limit})
		s.which = append(s.which, i)
		s.refundable = s.refundable || refundable
	}
	return nil
}

// decide takes the rate decision of s's items and carries it out
// (decided).
func (h *Handler) decide(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, s *scratch, repl *caddy.Replacer, now time.Time) error {
	out := s.out[:len(s.items)]
	var allowed bool
	var err error
	if tbl := h.zones[s.which[0]].lease; tbl != nil && len(s.items) == 1 && !s.refundable {
		// One zone, with leases: from this instance's lease on the key
		// when it holds one, else through Redis, asking for a lease when
		// the key is hot here. Several zones are decided together, per
		// request: a lease of one zone cannot admit for another.
		out[0] = lease.Take(r.Context(), tbl, s.items[0].Key, s.items[0].Limit, now)
		allowed = out[0].Allowed
	} else {
		allowed, err = h.store.Take(r.Context(), now, s.items, out)
	}
	return h.decided(w, r, next, s, repl, now, allowed, err)
}

// decided serves r by the decisions of s's items in s.out, allowed by all
// of them or not, or failed with err: an allowed r goes on, a denied one
// to reject.
func (h *Handler) decided(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, s *scratch, repl *caddy.Replacer, now time.Time, allowed bool, err error) error {
	out := s.out[:len(s.items)]
	if err != nil {
		// Neither store fails: memory cannot, and the Redis store's guard
		// answers by on_store_error. Should one fail, fail open.
		h.release(s)
		h.logger.Error("rate limit store failed; letting the request through", zap.Error(err))
		return next.ServeHTTP(w, r)
	}
	t := ratelimit.Tightest(out)
	if !allowed {
		return h.reject(w, r, next, s, out, t, repl, now)
	}
	for _, i := range s.which {
		h.zones[i].allowed.Inc()
	}
	httplimit.WriteHeaders(h.zones[s.which[t]].policy, w.Header(), out[t])
	if s.refundable {
		return h.serveCounted(w, r, next, s)
	}
	h.release(s)
	return next.ServeHTTP(w, r)
}

// reject refuses r, which the decisions out of s's items deny, with the
// headers of out[t], the tightest: a 429, or an error for handle_errors.
// It counts the denial in each zone that denied and logs it; in dry-run
// mode it lets r through.
func (h *Handler) reject(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, s *scratch, out []ratelimit.Decision, t int, repl *caddy.Replacer, now time.Time) error {
	for k, i := range s.which {
		if !out[k].Allowed {
			if h.DryRun {
				h.zones[i].dryRun.Inc()
			} else {
				h.zones[i].denied.Inc()
			}
		}
	}
	z := h.zones[s.which[t]]
	d := out[t]
	key := s.items[t].Key
	h.release(s)
	if h.Jitter > 0 {
		d.RetryAfter += time.Duration(rand.Float64() * h.Jitter * float64(d.RetryAfter))
	}
	httplimit.WriteHeaders(z.policy, w.Header(), d)
	if repl == nil {
		repl, _ = r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	}
	if repl != nil {
		repl.Map((&placeholders{zone: z.name, d: d}).get)
	}
	h.logDenial(z, r, d, key, now)
	if h.DryRun {
		return next.ServeHTTP(w, r)
	}
	httplimit.SetRetryAfter(w.Header(), d)
	if !hasErrorRoutes(r) {
		// What Caddy would write for the error, without its error
		// machinery (a logger built per error, the error placeholders),
		// which costs more than the rest of a rejection under a flood.
		w.WriteHeader(http.StatusTooManyRequests)
		return nil
	}
	// An error, so that handle_errors shapes the response; Error gives it
	// a fresh ID for {http.error.id}.
	return caddyhttp.Error(http.StatusTooManyRequests, z.rejection)
}

// hasErrorRoutes reports whether r's server has handle_errors routes (or
// whether that cannot be known, outside a Caddy server).
func hasErrorRoutes(r *http.Request) bool {
	srv, ok := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	return !ok || srv.Errors != nil && len(srv.Errors.Routes) > 0
}

// release clears s, so the pool holds no request's keys, and returns it.
func (h *Handler) release(s *scratch) {
	clear(s.items)
	clear(s.slots)
	s.items, s.which, s.refundable, s.slots = s.items[:0], s.which[:0], false, s.slots[:0]
	h.scratch.Put(s)
}

// placeholders answers the http.rate_limit.* placeholders of one
// rejection. It is registered with the replacer as a provider, so the
// values are formatted only if something (handle_errors, a log) asks.
type placeholders struct {
	zone string
	d    ratelimit.Decision
}

const placeholderPrefix = "http.rate_limit."

func (p *placeholders) get(key string) (any, bool) {
	if !strings.HasPrefix(key, placeholderPrefix) {
		return nil, false
	}
	switch key[len(placeholderPrefix):] {
	case "zone", "exceeded.name":
		return p.zone, true
	case "retry_after":
		return httplimit.CeilSeconds(p.d.RetryAfter), true
	case "limit":
		return p.d.Limit, true
	case "reset":
		return httplimit.CeilSeconds(p.d.ResetAfter), true
	}
	return nil, false
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ caddyfile.Unmarshaler       = (*Handler)(nil)
)
