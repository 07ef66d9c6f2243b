package traefikplugin

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/inflight"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// inFlight holds at most n requests of a key running at once (inFlight),
// in front of next: the rate's middleware, or the service for inFlight
// alone. A request takes its slot before the rate is asked, so a request
// refused a slot counts nothing, and one the rate refuses frees its slot
// as soon as the rejection is written.
type inFlight struct {
	name    string
	next    http.Handler
	rate    *Middleware // next, when it is the rate's middleware
	limiter *inflight.Limiter
	n       int64
	source  *keySource
	v6Bits  int
	policy  *httplimit.Policy
	alone   bool // no rate: the slot's headers describe the request
	memory  bool // the limiter has no Redis: TakeMemory's path
	// withRate: the slot and the rate in one Redis call a request
	// (serveSlotAndRate), for a rate on Redis without countStatus, which
	// reserves and refunds on its own path.
	withRate bool
	status   int
	message  string
	dryRun   bool
	logKey   bool

	lastLog    int64
	suppressed int64
}

// ServeHTTP takes a slot of the request's key, serves next, and frees the
// slot when next returns: completed, the client gone, a reset stream or
// a panic all end it.
func (f *inFlight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var key string
	if m := f.rate; m != nil && m.overrides != nil {
		// An exempt request (unlimited) takes no slot either.
		var exempt bool
		key, exempt = overriddenSlotKey(m, r)
		if exempt {
			f.next.ServeHTTP(w, r)
			return
		}
	} else if f.source == nil {
		key = addrKey(r.RemoteAddr, f.v6Bits)
	} else {
		key = keyOf(f.source, r)
	}
	if f.memory {
		e, held := inflight.TakeMemory(f.limiter, key, f.n)
		if e == nil {
			refuseSlot(f, w, r, key, held)
			return
		}
		defer inflight.ReleaseMemory(f.limiter, key, e)
		if f.alone {
			httplimit.WriteHeaders(f.policy, w.Header(), ratelimit.Decision{Allowed: true, Limit: f.n, Remaining: f.n - held})
		}
		f.next.ServeHTTP(w, r)
		return
	}
	serveSlotRemote(f, w, r, key)
}

// overriddenSlotKey returns the key of a request to m, a rate with
// overrides, and whether its override is unlimited, apart so that
// ServeHTTP's frame holds none of the match's temporaries (see
// Performance under yaegi).
func overriddenSlotKey(m *Middleware, r *http.Request) (string, bool) {
	k, client := overriddenKey(m, r)
	limit, _ := m.overrides.Match(k, client)
	return k, limit == ratelimit.Unlimited
}

// serveSlotRemote is ServeHTTP for slots kept in Redis, apart so that the
// memory's frame holds none of its temporaries (see Performance under
// yaegi).
func serveSlotRemote(f *inFlight, w http.ResponseWriter, r *http.Request, key string) {
	if f.withRate {
		serveSlotAndRate(f, w, r, key)
		return
	}
	slot, held, ok := f.limiter.Take(r.Context(), key, f.n, time.Now())
	if !ok {
		refuseSlot(f, w, r, key, held)
		return
	}
	defer f.limiter.Release(slot)
	if f.alone {
		httplimit.WriteHeaders(f.policy, w.Header(), ratelimit.Decision{Allowed: true, Limit: f.n, Remaining: f.n - held})
	}
	f.next.ServeHTTP(w, r)
}

// serveSlotAndRate serves a request of a rate beside inFlight on Redis:
// its slot and its rate in one script call
// (see inflight.Limiter.TakeWith), then the rate's decision carried out
// as the rate's middleware carries it out, and the slot freed when the
// service returns. In dry run a request refused its slot goes on to the
// rate's middleware, which decides it alone.
func serveSlotAndRate(f *inFlight, w http.ResponseWriter, r *http.Request, key string) {
	m := f.rate
	var limit int64 // the rule's
	if m.overrides != nil {
		// Matched again rather than carried from ServeHTTP, whose memory
		// path would pay under yaegi for one more variable.
		limit, _ = m.overrides.Match(overriddenKey(m, r))
	}
	items := []ratelimit.Item{{Zone: m.zone, Key: key, Limit: limit}}
	out := make([]ratelimit.Decision, 1)
	slot, held, full, _, err := f.limiter.TakeWith(r.Context(), m.store, items, out, f.n, time.Now())
	if full {
		refuseSlot(f, w, r, key, held)
		return
	}
	defer f.limiter.Release(slot) // a refused request's holds nothing
	if err != nil {
		out[0] = failOpen(m, limit)
	}
	decided(m, w, r, key, out[0])
}

// refuseSlot refuses a request whose key holds held slots: the
// middleware's status, Retry-After 1 and the headers of the slots; in dry
// run it logs and serves the request without a slot.
func refuseSlot(f *inFlight, w http.ResponseWriter, r *http.Request, key string, held int64) {
	// A key may hold more than n after n was lowered: none remain.
	d := ratelimit.Decision{Limit: f.n, RetryAfter: inflight.RetryAfter, ResetAfter: inflight.RetryAfter}
	if held < f.n {
		d.Remaining = f.n - held
	}
	what := "a request"
	if f.logKey {
		what = "key " + strconv.Quote(key)
	}
	if f.dryRun {
		if firstThisSecond(&f.lastLog) {
			io.WriteString(dryRunLog, "windowlimit: info: dry run: middleware "+strconv.Quote(f.name)+" would refuse "+what+": "+strconv.FormatInt(f.n, 10)+" in flight\n")
		}
		httplimit.WriteHeaders(f.policy, w.Header(), d)
		f.next.ServeHTTP(w, r)
		return
	}
	httplimit.WriteRejection(f.policy, w, d, f.status, f.message)
	if !firstThisSecond(&f.lastLog) {
		atomic.AddInt64(&f.suppressed, 1)
		return
	}
	io.WriteString(rejectLog, "windowlimit: info: middleware "+strconv.Quote(f.name)+" refused "+what+": "+
		strconv.FormatInt(f.n, 10)+" in flight; "+strconv.FormatInt(atomic.SwapInt64(&f.suppressed, 0), 10)+" more refusals since the last line\n")
}

// Limiters live here by middleware name, reused across reloads and by
// every router of the name while their settings hold, so that a request
// running across a reload keeps its slot.
var (
	inflightMu     sync.Mutex
	inflightByName = make(map[string]*namedLimiter)
)

type namedLimiter struct {
	id string // the settings it was made with
	l  *inflight.Limiter
}

// inFlightFor wraps next, the rate's middleware or the service, in the
// in-flight limit of config for the middleware name, whose settings are
// s; with no inFlight it returns next and drops name's limiter.
func inFlightFor(name string, next http.Handler, config *Config, s settings, alone bool) (http.Handler, error) {
	inflightMu.Lock()
	defer inflightMu.Unlock()
	if config.InFlight == 0 {
		if nl := inflightByName[name]; nl != nil {
			nl.l.Close()
			delete(inflightByName, name)
		}
		return next, nil
	}
	if config.InFlightTTL != "" && s.redis == nil {
		return nil, fieldError("inFlightTTL", "applies only with a redis block (in memory a slot dies with its instance): remove it or add redis")
	}
	ttl := time.Duration(0)
	if config.InFlightTTL != "" {
		var err error
		if ttl, err = parseDuration("inFlightTTL", config.InFlightTTL); err != nil {
			return nil, err
		}
	}
	id := "memory"
	if s.redis != nil {
		id = "redis " + s.redis.id
	}
	id += " " + strconv.Itoa(s.maxKeys) + " " + ttl.String()
	nl := inflightByName[name]
	if nl == nil || nl.id != id {
		opts := inflight.Options{Zone: name, MaxKeys: s.maxKeys, TTL: ttl}
		if opts.MaxKeys == 0 {
			opts.MaxKeys = ratelimit.DefaultMaxKeys
		}
		if s.redis != nil {
			redisMu.Lock()
			sr := redisByID[s.redis.id]
			redisMu.Unlock()
			if sr == nil {
				return nil, fieldError("redis", "no client")
			}
			slots, err := redisstore.NewSlots(sr.client, s.redis.keyPrefix)
			if err != nil {
				return nil, fieldError("redis", err.Error())
			}
			// One field at a time, through typed values: yaegi v0.16.1
			// panics on a pointer assigned to an interface field in a
			// tuple assignment.
			var remote inflight.Remote = slots
			var health inflight.Health = sr.guard
			opts.Remote = remote
			opts.Health = health
			opts.OnError = s.redis.policy
			opts.LogError = func(err error) {
				io.WriteString(storeLog, "windowlimit: error: middleware "+strconv.Quote(name)+": in-flight slots: "+err.Error()+"; the slot frees after inFlightTTL\n")
			}
		}
		l, err := inflight.New(opts)
		if err != nil {
			return nil, fieldError("inFlightTTL", err.Error())
		}
		if nl != nil {
			nl.l.Close()
		}
		nl = &namedLimiter{id: id, l: l}
		inflightByName[name] = nl
	}
	rate := middlewareOf(next)
	return &inFlight{
		name:     name,
		next:     next,
		rate:     rate,
		limiter:  nl.l,
		n:        config.InFlight,
		source:   s.source,
		v6Bits:   s.v6Bits,
		policy:   httplimit.NewInFlightPolicy(name, config.InFlight, s.mode),
		alone:    alone,
		memory:   s.redis == nil,
		withRate: rate != nil && s.redis != nil && rate.store != nil && rate.countStatus == nil,
		status:   s.status,
		message:  s.message,
		dryRun:   s.dryRun,
		logKey:   s.logKey,
	}, nil
}

// inFlightOnly reports whether c limits concurrency only: inFlight
// without window or limit.
func (c *Config) inFlightOnly() bool {
	return c.InFlight > 0 && c.Window == "" && c.Limit == 0
}

// checkInFlight checks the inFlight options of c, and that inFlight alone
// sets nothing that needs a window.
func (c *Config) checkInFlight() error {
	if c.InFlight < 0 {
		return fieldError("inFlight", "must be positive, got "+strconv.FormatInt(c.InFlight, 10))
	}
	if c.InFlightTTL != "" {
		if c.InFlight == 0 {
			return fieldError("inFlightTTL", "applies only with inFlight")
		}
		ttl, err := parseDuration("inFlightTTL", c.InFlightTTL)
		if err != nil {
			return err
		}
		if ttl < inflight.MinTTL {
			return fieldError("inFlightTTL", strconv.Quote(c.InFlightTTL)+" is too short (at least 1s: a holder renews within a third of it)")
		}
	}
	if !c.inFlightOnly() {
		return nil
	}
	for _, o := range []struct {
		name string
		set  bool
	}{
		{"subWindow", c.SubWindow != ""},
		{"algorithm", c.Algorithm != ""},
		{"cost", c.Cost != 0},
		{"countStatus", c.CountStatus != nil},
		{"overrides", len(c.Overrides) != 0},
		{"persist", c.Persist != nil},
	} {
		if o.set {
			return fieldError(o.name, "needs window and limit: inFlight alone limits how many requests run at once, not their rate")
		}
	}
	return nil
}

// buildInFlightOnly returns the middleware of config, inFlight alone, in
// front of next: its other settings (source, headers, status, message,
// redis, dry run) are checked as a rate's are.
func buildInFlightOnly(next http.Handler, config *Config, name string) (http.Handler, error) {
	rated := *config
	rated.Window, rated.Limit = "1m", 1 // only to check the other settings
	s, err := rated.validate()
	if err != nil {
		return nil, err
	}
	if s.source != nil {
		s.source.middleware = name
	}
	if _, err := redisStoreFor(name, s.redis); err != nil {
		return nil, err
	}
	return inFlightFor(name, next, config, s, true)
}
