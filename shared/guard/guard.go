package guard

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Defaults of Options.
const (
	DefaultProbeInterval = 250 * time.Millisecond
	DefaultProbeTimeout  = time.Second
	DefaultDenyCacheSize = 10000
	DefaultErrorInterval = time.Minute
)

// Options configure a Guard.
type Options struct {
	// OnError is the failure policy: FailAllow (the zero value), FailDeny
	// or FailLocal.
	OnError FailurePolicy
	// Probe checks that the remote store answers again; the breaker calls
	// it while open; a store's Ping is the usual choice. Nil disables the
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
	// NotCounted is the error (errors.Is) with which the store's Take
	// reports a request it would admit but could not count, such as
	// redisstore.ErrOutOfMemory: out then holds the store's decisions.
	// The policy decides such a request without tripping the breaker, and
	// every denial the store computed holds. Nil: the store has none.
	NotCounted error
	// Store names the store in the messages of events (see NewLogged),
	// such as "redis".
	Store string
}

// Guard is the Store a host uses in front of a remote store: it answers
// from its denial cache when it can, asks the remote store otherwise, and
// applies the failure policy when the store fails or its breaker is open.
// Its Take never returns an error.
type Guard struct {
	remote ratelimit.Store
	// take is remote's Take as a func value: its TakeFunc's when it has
	// one, which is cheaper to call interpreted than a method value.
	take       func(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error)
	notCounted error
	policy     FailurePolicy
	breaker    *breaker
	denials    *denyCache
	// signals is 0 while the denial cache is empty and the breaker closed:
	// the cache's entries plus 1 while the breaker is open (see Signals).
	signals *int64

	errs     errorLog
	oomErrs  errorLog // its own interval: a failure must not hide it
	busyErrs errorLog // ErrOverloaded's, for the same reason

	failures    uint64
	fallbacks   uint64
	cacheHits   uint64
	outOfMemory uint64
	overloaded  uint64
}

// Stats are counters for metrics.
type Stats struct {
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
	// Denials is how many denials the cache holds now.
	Denials int
}

// New returns a Guard in front of remote. Call Close to stop its
// probe.
func New(remote ratelimit.Store, opts Options) (*Guard, error) {
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
	g := &Guard{remote: remote, take: remote.Take, notCounted: opts.NotCounted, policy: opts.OnError, signals: new(int64)}
	if f, ok := remote.(takeFuncer); ok {
		g.take = f.TakeFunc()
	}
	g.errs = errorLog{emit: opts.LogError, interval: opts.ErrorInterval}
	g.oomErrs = errorLog{emit: opts.LogError, interval: opts.ErrorInterval}
	g.busyErrs = errorLog{emit: opts.LogError, interval: opts.ErrorInterval}
	if opts.Probe != nil {
		g.breaker = newBreaker(opts.Probe, opts.ProbeInterval, opts.ProbeTimeout, opts.LogRecovered, g.signals)
	}
	if opts.DenyCacheSize > 0 {
		g.denials = newDenyCache(opts.DenyCacheSize, g.signals)
	}
	return g, nil
}

// Take implements Store. The error is always nil: failures are logged and
// answered by the policy.
func (g *Guard) Take(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	return guardTake(ctx, g, now, items, out), nil
}

// TakeOne decides one request on key in z at now through g, as Take of
// one item would: what a caller that decides the common request without a
// call of g's (redisstore.TakeKey) does with the rest.
func TakeOne(ctx context.Context, g *Guard, z *ratelimit.Zone, key string, now time.Time) ratelimit.Decision {
	items := []ratelimit.Item{{Zone: z, Key: key}}
	out := make([]ratelimit.Decision, 1)
	guardTake(ctx, g, now, items, out)
	return out[0]
}

// Signals returns the word that says whether g sends a request straight
// to its store: 0 while its denial cache is empty and its breaker closed.
// A caller that calls the store without a call of g's on the common
// request (redisstore.TakeKey) loads it atomically, and goes through g
// (TakeOne) when it is not 0. One word rather than the cache's and the
// breaker's: interpreted, each atomic load costs the caller some 10
// allocations.
func Signals(g *Guard) *int64 {
	return g.signals
}

// guardTake is Take as a plain function. The common request, no denial
// cached and admitted, is decided here; a denial or a failure goes on in
// Answered.
func guardTake(ctx context.Context, g *Guard, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) bool {
	if g.denials != nil && atomic.LoadInt64(&g.denials.n) != 0 && checkCached(g.denials, now, items, out) {
		atomic.AddUint64(&g.cacheHits, 1)
		return false
	}
	if g.breaker != nil && atomic.LoadInt32(&g.breaker.isOpen) == 1 { // open(), inlined
		atomic.AddUint64(&g.fallbacks, 1)
		return g.policy.decide(now, items, out)
	}
	allowed, err := g.take(ctx, now, items, out)
	if allowed && err == nil {
		return true // Answered's common case, without its frame
	}
	return Answered(ctx, g, now, items, out, allowed, err)
}

// Answered finishes a request of items once g's store answered allowed,
// out and err: a failure goes to the policy (guardFailed), a denial to the
// denial cache. guardTake ends here, and so does a caller that called the
// store itself (redisstore.TakeKey).
func Answered(ctx context.Context, g *Guard, now time.Time, items []ratelimit.Item, out []ratelimit.Decision, allowed bool, err error) bool {
	if err != nil {
		return guardFailed(ctx, g, now, items, out, allowed, err)
	}
	if !allowed && g.denials != nil {
		g.denials.record(now, items, out)
	}
	return allowed
}

// guardFailed applies the failure policy to a request the remote store
// answered with err (and allowed).
func guardFailed(ctx context.Context, g *Guard, now time.Time, items []ratelimit.Item, out []ratelimit.Decision, allowed bool, err error) bool {
	if allowed && g.notCounted != nil && errors.Is(err, g.notCounted) {
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
			out[i] = ratelimit.Decision{Limit: ratelimit.LimitOf(&items[i]), RetryAfter: DenyRetryAfter, ResetAfter: DenyRetryAfter}
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
func (g *Guard) Stats() Stats {
	return Stats{
		Failures:    atomic.LoadUint64(&g.failures),
		Fallbacks:   atomic.LoadUint64(&g.fallbacks),
		CacheHits:   atomic.LoadUint64(&g.cacheHits),
		OutOfMemory: atomic.LoadUint64(&g.outOfMemory),
		Overloaded:  atomic.LoadUint64(&g.overloaded),
		Open:        g.breaker != nil && g.breaker.open(),
		Denials:     denialsIn(g.denials),
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

// Remote returns the store the guard is in front of.
func (g *Guard) Remote() ratelimit.Store { return g.remote }

// takeFuncer is a store that offers its Take as a func value, cheaper to
// call interpreted than a method (redisstore.Store).
type takeFuncer interface {
	TakeFunc() func(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error)
}
