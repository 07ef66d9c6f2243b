package inflight

import (
	"context"
	"errors"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// DefaultTTL is how long a Redis slot stays taken without its holder's
// renewal: a slot of an instance that died is free this long after its
// last renewal at most. Holders renew every TTL/3.
const DefaultTTL = 30 * time.Second

// MinTTL is the shortest TTL: a holder must renew within a third of it,
// across a slow Redis call.
const MinTTL = time.Second

// RetryAfter is the Retry-After of a refused slot: nothing schedules a
// slot's release, so the honest answer is the smallest one.
const RetryAfter = time.Second

// Remote is the fleet's slots in Redis (redisstore.Slots).
type Remote interface {
	Key(zone, key string) string
	// NewMember names a new slot of this holder, for a slot taken with
	// a decision (see TakeWith).
	NewMember() string
	Take(ctx context.Context, set string, n int64, ttl time.Duration) (member string, held int64, err error)
	Release(ctx context.Context, set string, members ...string) error
	Renew(ctx context.Context, set string, ttl time.Duration, members []string) (alive []bool, err error)
	Held(ctx context.Context, set string) (int64, error)
	Reset(ctx context.Context, set string) (int64, error)
}

// Health is what a Limiter asks of the guard of its Redis (guard.Guard):
// whether the breaker is open, and to account a failed call.
type Health interface {
	Down() bool
	Failed(ctx context.Context, err error, now time.Time)
}

// Options configure a Limiter.
type Options struct {
	// Zone names the zone in Redis keys.
	Zone string
	// MaxKeys bounds the keys holding slots in memory at once (0: none).
	MaxKeys int
	// Remote, when set, holds the slots in Redis for the fleet; else
	// they are this instance's.
	Remote Remote
	// TTL is how long a Redis slot stays taken without renewal
	// (DefaultTTL when 0).
	TTL time.Duration
	// Health is the guard of Remote's Redis; OnError its failure policy.
	Health  Health
	OnError guard.FailurePolicy
	// LogError, when set, is told of the failed renewals and releases,
	// which no request waits for.
	LogError func(error)
}

// Limiter keeps at most n requests of each key of one zone in flight.
type Limiter struct {
	zone    string
	local   *Table
	remote  Remote
	ttl     time.Duration
	health  Health
	onError guard.FailurePolicy
	held    int64   // atomic: slots this instance holds now
	refused uint64  // atomic
	hold    *holder // nil without Remote
}

// New returns a Limiter; with Remote set, call Close when done.
func New(opts Options) (*Limiter, error) {
	if opts.MaxKeys < 0 {
		return nil, errors.New("inflight: max keys must not be negative")
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	if opts.TTL < MinTTL {
		return nil, errors.New("inflight: ttl must be at least 1s")
	}
	l := &Limiter{zone: opts.Zone, local: NewTable(opts.MaxKeys), remote: opts.Remote, ttl: opts.TTL, health: opts.Health, onError: opts.OnError}
	if opts.Remote != nil {
		l.hold = newHolder(opts.Remote, opts.TTL, opts.LogError)
	}
	return l, nil
}

// Slot is a request's slot, for Release. The zero Slot holds nothing: a
// request admitted without one (by the failure policy allow) releases
// nothing.
type Slot struct {
	key    string
	e      *entry // a slot of the memory table
	set    string // a slot in Redis: its set and member
	member string
}

// Take takes a slot of key if fewer than n are held. It returns the slot,
// how many of key's slots are held with it (the known count when
// refused), and whether the request may run.
func (l *Limiter) Take(ctx context.Context, key string, n int64, now time.Time) (Slot, int64, bool) {
	if l.remote == nil || l.health != nil && l.health.Down() {
		if l.remote != nil && l.onError != guard.FailLocal {
			return l.byPolicy(n)
		}
		return l.takeLocal(key, n)
	}
	set := l.remote.Key(l.zone, key)
	member, held, err := l.remote.Take(ctx, set, n, l.ttl)
	if err != nil {
		if ctx.Err() != nil {
			// The client left during the call: refused, as the guard
			// refuses it, and a slot Redis may have given expires.
			return Slot{}, n, false
		}
		if l.health != nil {
			l.health.Failed(ctx, err, now)
		}
		if l.onError == guard.FailLocal {
			return l.takeLocal(key, n)
		}
		return l.byPolicy(n)
	}
	if member == "" {
		atomic.AddUint64(&l.refused, 1)
		return Slot{}, held, false
	}
	atomic.AddInt64(&l.held, 1)
	l.hold.add(set, member)
	return Slot{key: key, set: set, member: member}, held, true
}

// TakeWith takes a slot of the key of items, a request's only rate item,
// and decides its rate through store: with the slots in Redis and store a
// ratelimit.SlotTaker (the Redis store's guard), in one script call, else
// the slot first and the rate after it. A request refused a slot
// (full) is not counted; one the rate refuses holds no slot. s holds the
// slot of an allowed request, for Release; held counts the key's slots
// with it, or those that filled the set. err is store's.
func (l *Limiter) TakeWith(ctx context.Context, store ratelimit.Store, items []ratelimit.Item, out []ratelimit.Decision, n int64, now time.Time) (s Slot, held int64, full, allowed bool, err error) {
	key := items[0].Key
	if l.remote == nil || l.health != nil && l.health.Down() {
		return l.takeThenRate(ctx, store, items, out, n, now)
	}
	st, ok := store.(ratelimit.SlotTaker)
	if !ok {
		return l.takeThenRate(ctx, store, items, out, n, now)
	}
	set := l.remote.Key(l.zone, key)
	req := &ratelimit.Slot{Set: set, N: n, TTL: l.ttl, Member: l.remote.NewMember()}
	allowed, err = st.TakeSlot(ctx, now, items, out, req)
	switch req.State {
	case ratelimit.SlotFull:
		atomic.AddUint64(&l.refused, 1)
		return Slot{}, req.Held, true, false, nil
	case ratelimit.SlotTaken:
		atomic.AddInt64(&l.held, 1)
		l.hold.add(set, req.Member)
		s = Slot{key: key, set: set, member: req.Member}
		if !allowed || err != nil {
			// Not expected: the script takes a slot only for a request it
			// counted. Never keep one for a request that does not run.
			l.Release(s)
			return Slot{}, req.Held, false, allowed, err
		}
		return s, req.Held, false, true, nil
	}
	if !allowed || err != nil {
		return Slot{}, 0, false, allowed, err
	}
	// The store decided without Redis (its failure policy, or a request
	// Redis could not count): the slot is taken as Take takes it, by the
	// same policy or in one call more.
	var took bool
	if s, held, took = l.Take(ctx, key, n, now); !took {
		return Slot{}, held, true, false, nil
	}
	return s, held, false, true, nil
}

// takeThenRate is TakeWith in two steps: the slot, then the rate, whose
// refusal frees the slot.
func (l *Limiter) takeThenRate(ctx context.Context, store ratelimit.Store, items []ratelimit.Item, out []ratelimit.Decision, n int64, now time.Time) (Slot, int64, bool, bool, error) {
	s, held, ok := l.Take(ctx, items[0].Key, n, now)
	if !ok {
		return Slot{}, held, true, false, nil
	}
	if allowed, err := store.Take(ctx, now, items, out); !allowed || err != nil {
		l.Release(s)
		return Slot{}, held, false, allowed, err
	}
	return s, held, false, true, nil
}

// takeLocal takes a slot of the memory table.
func (l *Limiter) takeLocal(key string, n int64) (Slot, int64, bool) {
	e, held := TakeMemory(l, key, n)
	if e == nil {
		return Slot{}, held, false
	}
	return Slot{key: key, e: e}, held, true
}

// byPolicy answers a request Redis cannot decide by allow or deny.
func (l *Limiter) byPolicy(n int64) (Slot, int64, bool) {
	if l.onError == guard.FailDeny {
		return Slot{}, n, false
	}
	return Slot{}, 0, true
}

// Release frees s. With Redis it returns at once: the release is sent in
// the background, and a release that cannot be sent leaves the slot to
// expire after the TTL.
func (l *Limiter) Release(s Slot) {
	switch {
	case s.e != nil:
		ReleaseMemory(l, s.key, s.e)
	case s.member != "":
		l.hold.release(s.set, s.member)
		atomic.AddInt64(&l.held, -1)
	}
}

// Held returns how many slots this instance's requests hold now, in
// every key of the zone.
func (l *Limiter) Held() int64 { return atomic.LoadInt64(&l.held) }

// Refused returns how many requests were refused a slot.
func (l *Limiter) Refused() uint64 { return atomic.LoadUint64(&l.refused) }

// Count returns how many slots key holds now: in Redis, the fleet's.
func (l *Limiter) Count(ctx context.Context, key string) (int64, error) {
	if l.remote == nil {
		return l.local.Held(key), nil
	}
	return l.remote.Held(ctx, l.remote.Key(l.zone, key))
}

// Reset frees every slot of key, in Redis for the whole fleet, and
// returns how many there were. Requests still running run on without a
// slot: up to n more of the key may then run beside them.
func (l *Limiter) Reset(ctx context.Context, key string) (int64, error) {
	n := l.local.Reset(key)
	if l.remote == nil {
		return n, nil
	}
	return l.remote.Reset(ctx, l.remote.Key(l.zone, key))
}

// Close stops renewing once the slots still held are released, so that a
// request running across a reload keeps its slot. It does not wait.
func (l *Limiter) Close() {
	if l.hold != nil {
		l.hold.close()
	}
}

// Keys returns how many keys hold slots in this instance's memory table.
func (l *Limiter) Keys() int64 { return l.local.Keys() }

// Store names where the slots are: "memory" or "redis".
func (l *Limiter) Store() string {
	if l.remote != nil {
		return "redis"
	}
	return "memory"
}

// TakeMemory takes a slot of key in the memory table of l if fewer than
// n are held, and returns the slot's entry (nil when refused) and the
// slots key holds with it; ReleaseMemory frees the entry. A key that holds
// none is refused, as if its n were held, when the table already holds
// slots of MaxKeys keys.
//
// It is Take's memory case, and the Traefik plugin's memory path, with
// the table's work written out.
//
// A function, not a method: interpreted, the method costs more on every
// request (see the package documentation).
func TakeMemory(l *Limiter, key string, n int64) (*entry, int64) {
	t := l.local
	s := &t.shards[maphash.String(t.seed, key)%shardCount]
	s.mu.Lock()
	e := s.m[key]
	if e == nil {
		// The key's place is counted before it is checked: fresh keys of
		// two shards that loaded the count first could both take the last.
		if atomic.AddInt64(&t.keys, 1) > t.maxKeys && t.maxKeys > 0 {
			atomic.AddInt64(&t.keys, -1)
			s.mu.Unlock()
			atomic.AddUint64(&l.refused, 1)
			return nil, n
		}
		e = &entry{shard: s}
		s.m[key] = e
	}
	if e.held >= n {
		held := e.held
		s.mu.Unlock()
		atomic.AddUint64(&l.refused, 1)
		return nil, held
	}
	e.held++
	held := e.held
	s.mu.Unlock()
	atomic.AddInt64(&l.held, 1)
	return e, held
}

// ReleaseMemory frees the slot of key that TakeMemory returned: the key's
// entry goes once it holds none, unless an operator's reset removed it
// already (its holders' releases then free nothing of the new entry).
//
// A function, not a method: interpreted, the method costs more on every
// request (see the package documentation).
func ReleaseMemory(l *Limiter, key string, e *entry) {
	s := e.shard
	s.mu.Lock()
	e.held--
	if e.held <= 0 && s.m[key] == e {
		delete(s.m, key)
		atomic.AddInt64(&l.local.keys, -1)
	}
	s.mu.Unlock()
	atomic.AddInt64(&l.held, -1)
}
