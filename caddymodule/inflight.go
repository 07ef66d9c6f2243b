package caddymodule

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/inflight"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// slotWanted is an in-flight slot a request needs: of h.zones[zone], for
// key.
type slotWanted struct {
	zone int
	key  string
}

// heldSlot is a slot a request holds until its response is done.
type heldSlot struct {
	l    *inflight.Limiter
	slot inflight.Slot
}

// serveInFlight takes the slots of s (and refuses r when one is full),
// then decides the rate of s's items, and frees the slots when the
// response is done: returned, panicked, the client gone, the stream reset
// or timed out, all of which end next.ServeHTTP. A request the rate
// refuses frees its slots at once.
func (h *Handler) serveInFlight(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, s *scratch, repl *caddy.Replacer) error {
	now := time.Now()
	if len(s.slots) == 1 && len(s.items) == 1 && s.which[0] == s.slots[0].zone && h.zones[s.slots[0].zone].inflight.Store() == "redis" {
		return h.serveSlotAndRate(w, r, next, s, repl, now)
	}
	var one heldSlot // the common request: one zone's slot, no allocation
	var more []heldSlot
	for k, want := range s.slots {
		z := h.zones[want.zone]
		slot, held, ok := z.inflight.Take(r.Context(), want.key, z.inflightN, now)
		if !ok {
			for _, hs := range append(more, one) {
				if hs.l != nil {
					hs.l.Release(hs.slot)
				}
			}
			if !h.DryRun {
				return h.refuseInFlight(w, r, s, z, want.key, held, repl, now)
			}
			h.refuseInFlight(w, r, s, z, want.key, held, repl, now)
			more, one = nil, heldSlot{}
			break
		}
		if k == 0 {
			one = heldSlot{z.inflight, slot}
		} else {
			more = append(more, heldSlot{z.inflight, slot})
		}
		if len(s.items) == 0 && len(s.slots) == 1 {
			// in_flight alone: its headers describe the request.
			z.allowed.Inc()
			httplimit.WriteHeaders(z.inflightPolicy, w.Header(), ratelimit.Decision{Allowed: true, Limit: z.inflightN, Remaining: max(z.inflightN-held, 0)})
		}
	}
	defer func() {
		if one.l != nil {
			one.l.Release(one.slot)
		}
		for _, hs := range more {
			hs.l.Release(hs.slot)
		}
	}()
	if len(s.items) == 0 {
		h.release(s)
		return next.ServeHTTP(w, r)
	}
	return h.decide(w, r, next, s, repl, now)
}

// serveSlotAndRate serves the request of one zone with in_flight beside
// its rate, on Redis: the slot and the rate in one script call (see
// inflight.Limiter.TakeWith), then the slot freed when the response is
// done. In dry run a request refused its slot is decided by the rate
// alone.
func (h *Handler) serveSlotAndRate(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, s *scratch, repl *caddy.Replacer, now time.Time) error {
	z := h.zones[s.which[0]]
	slot, held, full, allowed, err := z.inflight.TakeWith(r.Context(), h.store, s.items, s.out[:1], z.inflightN, now)
	if full {
		if !h.DryRun {
			return h.refuseInFlight(w, r, s, z, s.items[0].Key, held, repl, now)
		}
		h.refuseInFlight(w, r, s, z, s.items[0].Key, held, repl, now)
		return h.decide(w, r, next, s, repl, now)
	}
	defer z.inflight.Release(slot) // a zero slot, for a refused request, frees nothing
	return h.decided(w, r, next, s, repl, now, allowed, err)
}

// refuseInFlight refuses r, key having held slots of z: 429 with
// Retry-After 1, through the rejection path of a rate denial (headers,
// placeholders, log, metrics). In dry run it only records the refusal,
// and s stays the caller's.
func (h *Handler) refuseInFlight(w http.ResponseWriter, r *http.Request, s *scratch, z *zoneState, key string, held int64, repl *caddy.Replacer, now time.Time) error {
	d := ratelimit.Decision{Limit: z.inflightN, Remaining: max(z.inflightN-held, 0), RetryAfter: inflight.RetryAfter, ResetAfter: inflight.RetryAfter}
	if h.DryRun {
		z.dryRun.Inc()
	} else {
		z.denied.Inc()
		h.release(s)
	}
	httplimit.WriteHeaders(z.inflightPolicy, w.Header(), d)
	if repl == nil {
		repl, _ = r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	}
	if repl != nil {
		repl.Map((&placeholders{zone: z.name, d: d}).get)
	}
	h.logDenial(z, r, d, key, now)
	if h.DryRun {
		return nil
	}
	httplimit.SetRetryAfter(w.Header(), d)
	if !hasErrorRoutes(r) {
		w.WriteHeader(http.StatusTooManyRequests)
		return nil
	}
	return caddyhttp.Error(http.StatusTooManyRequests, z.rejection)
}

// inflightPool holds the in-flight limiters of the loaded configs by
// zone, store and settings, so that a reload keeps the slots of the
// requests still running.
var inflightPool = caddy.NewUsagePool()

type pooledLimiter struct{ *inflight.Limiter }

// Destruct stops the limiter's renewals once its slots are released.
func (p pooledLimiter) Destruct() error {
	p.Close()
	return nil
}

// provisionInFlight gives each zone with in_flight its limiter: in
// memory, or in the Redis of p (pooled under redisKey) with policy.
func (h *Handler) provisionInFlight(mode httplimit.HeaderMode, p *pooledRedis, redisKey string, prefix string, policy guard.FailurePolicy) error {
	for _, z := range h.zones {
		cfg := h.RateLimits[z.name]
		if cfg == nil || cfg.InFlight == 0 {
			continue
		}
		ttl := time.Duration(cfg.InFlightTTL)
		if ttl != 0 && p == nil {
			return fmt.Errorf("zone %q: in_flight_ttl applies only with store redis (in memory a slot dies with its instance): remove it or add store redis", z.name)
		}
		store := "memory"
		if p != nil {
			store = redisKey
		}
		key := "inflight\x00" + z.name + "\x00" + store + "\x00" + strconv.Itoa(h.MaxKeys) + "\x00" + ttl.String()
		v, _, err := inflightPool.LoadOrNew(key, func() (caddy.Destructor, error) {
			opts := inflight.Options{Zone: z.name, MaxKeys: h.MaxKeys, TTL: ttl}
			if opts.MaxKeys == 0 {
				opts.MaxKeys = ratelimit.DefaultMaxKeys
			}
			if p != nil {
				slots, err := redisstore.NewSlots(p.runner, prefix)
				if err != nil {
					return nil, err
				}
				opts.Remote, opts.Health, opts.OnError = slots, p.guard, policy
				opts.LogError = func(err error) {
					h.logger.Warn("rate_limit in-flight slots: renewal or release failed; the slot frees after its ttl", zap.String("zone", z.name), zap.Error(err))
				}
			}
			l, err := inflight.New(opts)
			if err != nil {
				return nil, err
			}
			return pooledLimiter{l}, nil
		})
		if err != nil {
			return fmt.Errorf("zone %q: in_flight: %w", z.name, err)
		}
		h.inflightKeys = append(h.inflightKeys, key)
		z.inflight = v.(pooledLimiter).Limiter
		z.inflightN = cfg.InFlight
		z.inflightPolicy = httplimit.NewInFlightPolicy(z.name, cfg.InFlight, mode)
	}
	return nil
}

// releaseInFlight drops the handler's uses of its limiters.
func (h *Handler) releaseInFlight() error {
	var first error
	for _, key := range h.inflightKeys {
		if _, err := inflightPool.Delete(key); err != nil && first == nil {
			first = fmt.Errorf("releasing in-flight slots: %w", err)
		}
	}
	h.inflightKeys = nil
	return first
}

// liveLimiters calls f with every in-flight limiter in use, by zone name.
func liveLimiters(f func(zone string, l *inflight.Limiter)) {
	inflightPool.Range(func(k, v any) bool {
		key := k.(string)
		name := key[len("inflight\x00"):]
		for i := 0; i < len(name); i++ {
			if name[i] == 0 {
				name = name[:i]
				break
			}
		}
		f(name, v.(pooledLimiter).Limiter)
		return true
	})
}
