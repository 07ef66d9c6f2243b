package ratelimit

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Defaults of GuardOptions.
const (
	DefaultProbeInterval = 250 * time.Millisecond
	DefaultProbeTimeout  = time.Second
	DefaultDenyCacheSize = 10000
	DefaultErrorInterval = time.Minute
)

// GuardOptions configure a Guard.
type GuardOptions struct {
	// OnError is the failure policy: FailAllow (the zero value), FailDeny
	// or FailLocal.
	OnError FailurePolicy
	// Probe checks that the remote store answers again; the breaker calls
	// it while open. RedisStore.Ping is the usual choice. Nil disables the
	// breaker: every request then tries the store.
	Probe func(context.Context) error
	// ProbeInterval is the delay between probes; zero means
	// DefaultProbeInterval.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe; zero means DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// DenyCacheSize bounds the denials remembered locally; zero means
	// DefaultDenyCacheSize and a negative value disables the cache.
	DenyCacheSize int
	// LogError receives store errors, at most one per ErrorInterval, with
	// the number of errors suppressed since the previous call. Nil drops
	// them. ErrOutOfMemory (errors.Is) is reported on its own schedule:
	// Redis answers, but cannot count what it would admit. So is
	// ErrOverloaded: the host's backlog, which a flood may fill at will,
	// so that it must not hide a failure either.
	LogError func(err error, suppressed int64)
	// ErrorInterval is the least time between two LogError calls; zero
	// means DefaultErrorInterval.
	ErrorInterval time.Duration
	// LogRecovered, when set, is called when the breaker closes again with
	// how long it was open.
	LogRecovered func(down time.Duration)
}

// Guard is the Store a host uses in front of a remote store: it answers
// from its denial cache when it can, asks the remote store otherwise, and
// applies the failure policy when the store fails or its breaker is open.
// Its Take never returns an error.
type Guard struct {
	remote   Store
	redis    *RedisStore // remote, when it is one
	policy   FailurePolicy
	breaker  *breaker
	denials  *denyCache
	errs     errorLog
	oomErrs  errorLog // its own interval: a failure must not hide it
	busyErrs errorLog // ErrOverloaded's, for the same reason

	failures    uint64
	fallbacks   uint64
	cacheHits   uint64
	outOfMemory uint64
	overloaded  uint64
}

// GuardStats are counters for metrics.
type GuardStats struct {
	// Failures counts the remote store's errors.
	Failures uint64
	// Fallbacks counts requests decided by the failure policy.
	Fallbacks uint64
	// CacheHits counts requests denied by the denial cache.
	CacheHits uint64
	// OutOfMemory counts requests the store would admit but could not
	// count because it is out of memory (Redis over its maxmemory, see
	// ErrOutOfMemory). The failure policy decided them, so they are in
	// Fallbacks too, but not in Failures: the store answered, and its
	// denials held.
	OutOfMemory uint64
	// Overloaded counts requests whose store call was not sent because
	// the host's own backlog of calls was too long (see ErrOverloaded).
	// The failure policy decided them, so they are in Fallbacks too, but
	// not in Failures: the store did not fail, and the breaker stayed
	// closed.
	Overloaded uint64
	// Open reports whether the breaker is open now.
	Open bool
}

// NewGuard returns a Guard in front of remote. Call Close to stop its
// probe.
func NewGuard(remote Store, opts GuardOptions) (*Guard, error) {
	if remote == nil {
		return nil, errors.New("guard: no remote store")
	}
	if opts.OnError > FailLocal {
		return nil, errors.New("guard: unknown failure policy " + opts.OnError.String())
	}
	if opts.ProbeInterval < 0 || opts.ProbeTimeout < 0 || opts.ErrorInterval < 0 {
		return nil, errors.New("guard: intervals and timeouts must not be negative")
	}
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.ProbeTimeout == 0 {
		opts.ProbeTimeout = DefaultProbeTimeout
	}
	if opts.ErrorInterval == 0 {
		opts.ErrorInterval = DefaultErrorInterval
	}
	if opts.DenyCacheSize == 0 {
		opts.DenyCacheSize = DefaultDenyCacheSize
	}
	g := &Guard{remote: remote, policy: opts.OnError}
	g.redis, _ = remote.(*RedisStore)
	g.errs = errorLog{emit: opts.LogError, interval: opts.ErrorInterval}
	g.oomErrs = errorLog{emit: opts.LogError, interval: opts.ErrorInterval}
	g.busyErrs = errorLog{emit: opts.LogError, interval: opts.ErrorInterval}
	if opts.Probe != nil {
		g.breaker = newBreaker(opts.Probe, opts.ProbeInterval, opts.ProbeTimeout, opts.LogRecovered)
	}
	if opts.DenyCacheSize > 0 {
		g.denials = newDenyCache(opts.DenyCacheSize)
	}
	return g, nil
}

// Take implements Store. The error is always nil: failures are logged and
// answered by the policy.
func (g *Guard) Take(ctx context.Context, now time.Time, items []Item, out []Decision) (bool, error) {
	return guardTake(g, ctx, now, items, out), nil
}

// TakeRemote decides one request on key in z at now through g, as Take
// of one item would, as a plain function. It is the call the Traefik
// plugin makes on every request with a redis block: under yaegi a call
// allocates every local and temporary of the callee, a method call costs
// several function calls and an interface's more, so the common request
// (a RedisStore over a preparedRunner, the breaker closed, no denial
// cached, admitted) is decided here in a straight line: takeOne without
// its frame, the script call prepared for z. Anything else goes on in
// remoteRest. Every temporary here is a slot allocated on every call,
// hence few of them: a call prepared for g's store implies a RedisStore
// over a preparedRunner, without callerTime (see redisTake).
func TakeRemote(g *Guard, ctx context.Context, z *Zone, key string, now time.Time) Decision {
	pc, _ := z.redisCall.Load().(*preparedCall)
	if pc == nil || pc.store != g.redis || g.denials != nil && atomic.LoadInt64(&g.denials.n) != 0 ||
		g.breaker != nil && atomic.LoadInt32(&g.breaker.isOpen) == 1 ||
		len(key) > MaxRedisKeyPart || key != "" && key[0] == '#' { // a hashed key (redisKeyPart)
		return remoteRest(g, ctx, z, key, now, nil, nil, false)
	}
	res, err := pc.store.evalPrepared(ctx, pc.head, pc.keyHead+key+"}", pc.take)
	if err != nil || len(res) != 4 || res[0] != 1 {
		return remoteRest(g, ctx, z, key, now, res, err, true)
	}
	return Decision{
		Allowed:    true,
		Limit:      z.rule.Limit,
		Remaining:  res[1],
		RetryAfter: time.Duration(res[2]) * time.Microsecond,
		ResetAfter: time.Duration(res[3]) * time.Microsecond,
	}
}

// remoteRest finishes TakeRemote: through guardTake when called is false,
// else with the reply res and error err of takeOne's script call, which
// TakeRemote made.
func remoteRest(g *Guard, ctx context.Context, z *Zone, key string, now time.Time, res []int64, err error, called bool) Decision {
	items := []Item{{Zone: z, Key: key}}
	out := make([]Decision, 1)
	if !called {
		guardTake(g, ctx, now, items, out)
		return out[0]
	}
	allowed, err := takeOneDone(g.redis, ctx, now, items, out, res, err)
	guardDone(g, ctx, now, items, out, allowed, err)
	return out[0]
}

// guardTake is Take as a plain function. A RedisStore is called as a
// function (redisTake) rather than through the Store interface; a failure
// goes on in guardFailed.
func guardTake(g *Guard, ctx context.Context, now time.Time, items []Item, out []Decision) bool {
	if g.denials != nil && checkDenials(g.denials, now, items, out) {
		atomic.AddUint64(&g.cacheHits, 1)
		return false
	}
	if g.breaker != nil && atomic.LoadInt32(&g.breaker.isOpen) == 1 { // open(), inlined
		atomic.AddUint64(&g.fallbacks, 1)
		return g.policy.decide(now, items, out)
	}
	var allowed bool
	var err error
	if g.redis != nil {
		allowed, err = redisTake(g.redis, ctx, now, items, out)
	} else {
		allowed, err = g.remote.Take(ctx, now, items, out)
	}
	return guardDone(g, ctx, now, items, out, allowed, err)
}

// guardDone finishes guardTake once the remote store answered allowed
// and err: a failure goes to guardFailed, a denial to the denial cache.
func guardDone(g *Guard, ctx context.Context, now time.Time, items []Item, out []Decision, allowed bool, err error) bool {
	if err != nil {
		return guardFailed(g, ctx, now, items, out, allowed, err)
	}
	if !allowed && g.denials != nil {
		g.denials.record(now, items, out)
	}
	return allowed
}

// guardFailed applies the failure policy to a request the remote store
// answered with err (and allowed).
func guardFailed(g *Guard, ctx context.Context, now time.Time, items []Item, out []Decision, allowed bool, err error) bool {
	if allowed && errors.Is(err, ErrOutOfMemory) {
		// The store answered and would admit, but cannot count: the
		// policy decides and the breaker stays closed (the next request
		// may be countable). Its denials came back without this error.
		atomic.AddUint64(&g.outOfMemory, 1)
		atomic.AddUint64(&g.fallbacks, 1)
		g.oomErrs.report(err, now)
		return g.policy.decide(now, items, out)
	}
	if ctx.Err() != nil {
		// The client left during the call: that says nothing about the
		// store, and no one waits for the answer. The request is denied,
		// uncounted, so that a client that resets at the right moment
		// does not reach the backend past the limit under allow.
		for i := range items {
			out[i] = Decision{Limit: items[i].limit(), RetryAfter: DenyRetryAfter, ResetAfter: DenyRetryAfter}
		}
		return false
	}
	if errors.Is(err, ErrOverloaded) {
		// Never sent: the host's own backlog, which says nothing about
		// the store. Tripping the breaker would let a flood open it with
		// its own load, and the policy then decide everyone's requests.
		atomic.AddUint64(&g.overloaded, 1)
		atomic.AddUint64(&g.fallbacks, 1)
		g.busyErrs.report(err, now)
		return g.policy.decide(now, items, out)
	}
	atomic.AddUint64(&g.failures, 1)
	atomic.AddUint64(&g.fallbacks, 1)
	if g.breaker != nil {
		g.breaker.trip()
	}
	g.errs.report(err, now)
	return g.policy.decide(now, items, out)
}

// Stats returns the guard's counters.
func (g *Guard) Stats() GuardStats {
	return GuardStats{
		Failures:    atomic.LoadUint64(&g.failures),
		Fallbacks:   atomic.LoadUint64(&g.fallbacks),
		CacheHits:   atomic.LoadUint64(&g.cacheHits),
		OutOfMemory: atomic.LoadUint64(&g.outOfMemory),
		Overloaded:  atomic.LoadUint64(&g.overloaded),
		Open:        g.breaker != nil && g.breaker.open(),
	}
}

// StopProbeWhenIdle makes the breaker's probe end once no request came
// through the guard for idle: the breaker then closes, and the next
// request tries the store again (tripping it again if the store still
// fails). A guard nobody uses then holds no goroutine, even with its
// store down. Call it before the guard's first Take.
func (g *Guard) StopProbeWhenIdle(idle time.Duration) {
	if g.breaker == nil {
		return
	}
	g.breaker.idle = idle
	g.breaker.activity = func() uint64 {
		return atomic.LoadUint64(&g.fallbacks) + atomic.LoadUint64(&g.cacheHits)
	}
}

// Close stops the breaker's probe. The guard still answers afterwards.
func (g *Guard) Close() {
	if g.breaker != nil {
		g.breaker.close()
	}
}
