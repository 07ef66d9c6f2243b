package ratelimit

import (
	"hash/maphash"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxKeys is the number of keys a zone tracks when Options.MaxKeys
// is zero: about 11 MB at 10 sub-windows, and 6 MB more for the summary
// of evicted keys once the zone is full.
const DefaultMaxKeys = 100000

// MaxMaxKeys is the largest Options.MaxKeys: 16,777,216 keys, about 1.9
// GB at 10 sub-windows and 1 GB more for the summary of evicted keys.
// MaxKeys is the zone's memory bound, and a bound that no machine could
// hold (1e12) is none.
const MaxMaxKeys = 1 << 24

// MinSweepInterval is the shortest SweepInterval. A sweep walks every key
// of the zone, shard by shard under its lock: about 5 ms at 100,000 keys,
// so at this interval the sweeper takes at most a few percent of a core,
// where 1ns made it a busy loop. Sweeping more often would free keys only
// marginally sooner: a key goes when its whole window is over, and a full
// zone makes room on its own.
const MinSweepInterval = 100 * time.Millisecond

// Options tune a zone's in-memory store.
type Options struct {
	// MaxKeys bounds the keys tracked at once; when a zone is full, a new
	// key evicts one of a few sampled keys: one whose window is over, else
	// the one with the smallest count. What an evicted key still counted is
	// kept in a fixed-size summary (48 to 96 bytes per key of MaxKeys), so
	// that it comes back with at least that count. Zero means
	// DefaultMaxKeys.
	MaxKeys int
	// SweepInterval is how often keys whose window is empty are deleted.
	// Zero means the rule's window, clamped to [1s, 1m]; negative disables
	// the sweeper (eviction still bounds memory); otherwise it must be at
	// least MinSweepInterval.
	SweepInterval time.Duration
	// Now is the clock of the sweeper; nil means time.Now.
	Now func() time.Time
	// Evicting, when set, is called by the sweeper when the zone has
	// evicted keys that still counted, at most once every EvictingEvery,
	// with how many since the previous call: the zone is full, because
	// max_keys is too small for the traffic or because a flood of fresh
	// keys is on. It is never called on the request path, nor without a
	// sweeper.
	Evicting func(evicted uint64)
	// EvictingEvery is the least time between two calls of Evicting; zero
	// means DefaultEvictingEvery.
	EvictingEvery time.Duration
	// SleepAfter, when positive, lets the sweeper end once the zone has
	// held nothing that counts (no key, no denial, nothing live in the
	// summary of evicted keys) at every sweep for SleepAfter, and Sleep,
	// if set, agrees: the zone then sleeps, with no goroutine, and
	// dropping it would lose nothing. It still answers: the first new key
	// it takes wakes it, which calls Woken, if set, and restarts the
	// sweeper. Requests pay nothing for it:
	// the wake-up rides on the branch that makes room for a new key.
	SleepAfter time.Duration
	// Sleep is asked whether the zone may sleep, with every shard of the
	// zone locked: it must not call the zone. The host drops its
	// reference to the zone there (a registry entry) if it likes.
	Sleep func(z *Zone) bool
	// Persist makes the zone keep, per key, the portable id a snapshot
	// names it by (8 bytes per key, and a SHA-256 per new key), so that
	// Snapshot and Restore work; without it they refuse.
	Persist bool
	// Scope is what else a persisted zone's snapshot belongs to, beyond
	// its name and shape: the host's key template, say. A snapshot goes
	// back only into a zone of the same scope, and ZoneID tells zones of
	// different scopes apart, so that a reload and a restart agree.
	Scope string
	// Ban, when positive, refuses a key that reaches its limit for that
	// long from the request its window first refuses, even once the
	// window would admit it again (see TakeBanAt). A zone keeps at most
	// MaxKeys bans, apart from its keys: a ban outlives its key's
	// window. Zero means no bans; it is at most MaxBan.
	Ban time.Duration
	// Woken is told that a sleeping zone took a key again, by the request
	// that woke it, before the request is decided, so that the host can
	// take the zone back before anyone looks for it; a shard of the zone
	// is locked: it must not call the zone. It is not called for a closed
	// zone.
	Woken func(z *Zone)
}

// DefaultEvictingEvery is how often, at most, a full zone reports its
// evictions: a log line a minute says what is going on without flooding
// the log while a flood is.
const DefaultEvictingEvery = time.Minute

// zoneNumbers numbers the zones of the process (see ZoneNumber).
var zoneNumbers uint64

// Zone is one named rule with the in-memory state of every key it limits.
// It is safe for concurrent use.
type Zone struct {
	name   string
	rule   Rule
	number uint64

	// Derived from the rule once, so the per-request path only reads.
	log    bool
	k      int64   // sub-windows per window
	m      int64   // ring cells: k+1
	span   int64   // T in nanoseconds
	spanF  float64 // T in nanoseconds, as a float
	window int64   // W in nanoseconds
	// reach is how many sub-windows a request stays counted for: k+1 for
	// the sliding algorithms, 1 for Fixed; resetTail is (reach-1)*T.
	reach     int64
	resetTail int64
	// weighted is set for Sliding, whose leaving sub-window counts in part;
	// leavingWeight is its fixed weight otherwise (1 Strict, 0 Fixed).
	weighted      bool
	leavingWeight float64
	// purgeGap is how often, in nanoseconds, a full shard may sweep
	// itself: one sub-window, or a tenth of the window for Log.
	purgeGap int64
	// maxTime is the latest time a decision reads: beyond it, the ends of
	// sub-windows would overflow.
	maxTime int64
	// limit is the rule's limit as a float, ruleLimit as it is: TakeAt
	// reads it in one selection, where the rule's costs it two slots
	// interpreted.
	limit     float64
	ruleLimit int64
	cost      float64
	cost32    uint32
	zeros     []uint32

	seed   maphash.Seed
	mask   uint64
	shards []shard
	// shardOf holds &shards[i] at i, for TakeAt and the other functions a
	// request calls: interpreted, an element of shards indexed is copied
	// into a frame slot of a shard's size, one of shardOf is a pointer.
	shardOf  []*shard
	perShard int
	maxKeys  int // Options.MaxKeys, or its default

	stop     chan struct{}
	stopOnce sync.Once

	// The sweeper's settings and state, kept here so that a zone that
	// slept can restart it; reported and last are the sweeper's alone.
	interval      time.Duration
	now           func() time.Time
	evicting      func(uint64)
	evictingEvery time.Duration
	reported      uint64
	last          time.Time
	sleepAfter    time.Duration
	sleepOK       func(*Zone) bool
	woken         func(*Zone)
	// asleep is 1 while the zone sleeps: no sweeper runs, and every
	// shard's room is 0.
	asleep int32

	// persist is set under Options.Persist (see persist.go).
	persist *persistState

	// ban is Options.Ban in nanoseconds; bans counts the bans started
	// (see ban.go).
	ban  int64
	bans uint64
}

// NewZone validates rule and returns a zone with an empty store, or the
// first bad value as a *FieldError. Call Close to stop its sweeper.
func NewZone(name string, rule Rule, opts Options) (*Zone, error) {
	if err := rule.Normalize(); err != nil {
		return nil, err
	}
	if opts.MaxKeys < 0 {
		return nil, fieldError(FieldMaxKeys, "must not be negative, got "+strconv.Itoa(opts.MaxKeys))
	}
	if opts.MaxKeys > MaxMaxKeys {
		return nil, fieldError(FieldMaxKeys, "must be at most "+strconv.Itoa(MaxMaxKeys)+" (the zone's memory bound), got "+strconv.Itoa(opts.MaxKeys))
	}
	if opts.SweepInterval > 0 && opts.SweepInterval < MinSweepInterval {
		return nil, fieldError(FieldSweepInterval, opts.SweepInterval.String()+" is too short (at least "+MinSweepInterval.String()+")")
	}
	if err := checkBan(opts.Ban); err != nil {
		return nil, err
	}
	maxKeys, interval := effectiveOptions(rule, opts)
	z := &Zone{
		name:      name,
		rule:      rule,
		number:    atomic.AddUint64(&zoneNumbers, 1),
		log:       rule.Algorithm == Log,
		k:         int64(rule.buckets()),
		span:      int64(rule.SubWindow),
		spanF:     float64(rule.SubWindow),
		window:    int64(rule.Window),
		weighted:  rule.Algorithm == Sliding,
		limit:     float64(rule.Limit),
		ruleLimit: rule.Limit,
		cost:      float64(rule.Cost),
		cost32:    uint32(rule.Cost),
		seed:      maphash.MakeSeed(),
		stop:      make(chan struct{}),
		ban:       int64(opts.Ban),
	}
	z.m = z.k + 1
	z.zeros = make([]uint32, z.m)
	z.reach = z.m
	z.purgeGap = z.span
	if z.log {
		z.purgeGap = z.window / 10
	}
	switch rule.Algorithm {
	case Fixed:
		z.reach = 1
	case Strict:
		z.leavingWeight = 1
	}
	z.resetTail = (z.reach - 1) * z.span
	z.maxTime = math.MaxInt64 - 2*(z.window+z.span)
	if opts.Persist {
		z.persist = newPersistState()
		z.persist.scope = opts.Scope
	}

	// Shards: a power of two, at most 64, with at least 1024 keys each so
	// that an uneven hash does not evict early in small zones.
	n := 1
	for n < 64 && maxKeys/(n*2) >= 1024 {
		n *= 2
	}
	z.shards = make([]shard, n)
	z.shardOf = make([]*shard, n)
	z.mask = uint64(n - 1)
	z.perShard = maxKeys / n
	z.maxKeys = maxKeys
	for i := range z.shards {
		z.shards[i].init(z)
		z.shardOf[i] = &z.shards[i]
	}

	if interval > 0 {
		z.interval = interval
		z.now = opts.Now
		if z.now == nil {
			z.now = time.Now
		}
		z.evicting = opts.Evicting
		z.evictingEvery = opts.EvictingEvery
		if z.evictingEvery <= 0 {
			z.evictingEvery = DefaultEvictingEvery
		}
		z.sleepAfter, z.sleepOK, z.woken = opts.SleepAfter, opts.Sleep, opts.Woken
		go z.sweepEvery()
	}
	return z, nil
}

// effectiveOptions returns the MaxKeys and SweepInterval a zone of the
// normalized rule runs with under opts: zero means the default.
func effectiveOptions(rule Rule, opts Options) (int, time.Duration) {
	maxKeys := opts.MaxKeys
	if maxKeys == 0 {
		maxKeys = DefaultMaxKeys
	}
	interval := opts.SweepInterval
	if interval == 0 {
		interval = rule.Window
		if interval < time.Second {
			interval = time.Second
		}
		if interval > time.Minute {
			interval = time.Minute
		}
	}
	return maxKeys, interval
}

// Name returns the zone's name.
func (z *Zone) Name() string { return z.name }

// Rule returns the zone's normalized rule.
func (z *Zone) Rule() Rule { return z.rule }

// Close stops the sweeper. The zone still answers afterwards.
func (z *Zone) Close() {
	z.stopOnce.Do(func() { close(z.stop) })
}

// TakeAt decides one request on key at now and, if it is allowed, counts
// it. The common case, a known key admitted in its current sub-window, is
// here; everything else goes to takeRest. An unknown key, and every key of
// a Log zone, finds the shard's slot 0, whose head never holds the time
// (see shard.heads).
//
// A function, not a method: interpreted, the method costs 22 allocations a
// request more (see the package documentation).
func TakeAt(z *Zone, key string, now time.Time) Decision {
	t := now.UnixNano()
	k := maphash.String(z.seed, key)
	s := z.shardOf[k&z.mask]
	s.Lock()
	h := &s.heads[s.index[k]]
	// Declared, then assigned: interpreted, a sum assigned is written in
	// place, where a definition costs a frame slot more.
	var left int64
	var count float64
	left = h.end - t
	if left > 0 && left <= z.span {
		// t is in the head's sub-window: t < end and t >= end-T.
		count = h.inside + h.leaving*float64(left)/z.spanF + z.cost
		if count <= z.limit {
			h.inside += z.cost
			s.Unlock() // left and count were read under the lock
			return Decision{Allowed: true, Limit: z.ruleLimit, Remaining: int64(z.limit - count), ResetAfter: duration(left + z.resetTail)}
		}
	}
	return takeRest(z, s, key, k, t, 0, h)
}

// duration is time.Duration under a name of this package: interpreted,
// another package's name costs the request path's functions (TakeAt,
// takeRest, TakeBanAt, TakeReservedAt) a frame slot each time.
type duration = time.Duration

// TakeLimitAt is TakeAt for a key whose N is limit instead of the rule's
// (see Item.Limit): the key's count is the same whatever its limit.
//
// A function, not a method: interpreted, the method costs more (see the
// package documentation).
func TakeLimitAt(z *Zone, key string, now time.Time, limit int64) Decision {
	t := now.UnixNano()
	k := maphash.String(z.seed, key)
	s := z.shardOf[k&z.mask] // see TakeAt
	s.Lock()
	return takeRest(z, s, key, k, t, limit, &s.heads[s.index[k]])
}

// takeRest is TakeAt's every other case, with the shard s of key,
// hashed to k, locked, under limit (0: the rule's), h the key's head (slot
// 0's for an unknown key); it unlocks s. First the key's cached denial, if it
// still holds: t is in [from, until) and the key's head is as the denial
// found it, so not admitted since. (Before from, the start of the head's
// sub-window, the clock went back and t counts from there, RetryAfter
// too. An unknown key has no entry: the zero denyUntil's interval is
// empty. A denial holds only for the limit it was decided under.) That
// check is here rather than in take, so that a denied flood does not pay
// for take's frame, and not in a function of its own, which would cost
// every request that gets here one more call.
func takeRest(z *Zone, s *shard, key string, k uint64, t int64, limit int64, h *head) Decision {
	if limit == 0 {
		limit = z.ruleLimit // here, not in TakeAt's frame
	}
	if den := s.denied[k]; t < den.until && t >= den.from && den.limit == limit && *h == den.head {
		s.Unlock()
		return Decision{Limit: limit, RetryAfter: duration(den.until - t), ResetAfter: duration(den.resetAt - t)}
	}
	d := take(z, s, key, k, t, limit, true)
	s.Unlock()
	return d
}

// hash returns the hash under which the zone holds key; its low bits
// choose the shard.
func (z *Zone) hash(key string) uint64 { return maphash.String(z.seed, key) }

// Len returns the number of keys the zone tracks.
func (z *Zone) Len() int {
	n := 0
	for i := range z.shards {
		s := &z.shards[i]
		s.Lock()
		n += len(s.index)
		s.Unlock()
	}
	return n
}

// ZoneStats counts what a zone's bound on memory did.
type ZoneStats struct {
	// Keys is the number of keys the zone tracks now.
	Keys int
	// Evictions is the number of keys removed to make room for new ones
	// while their window still held a count. Keys deleted because their
	// window was over, by the sweeper or by a full shard, are not counted.
	Evictions uint64
	// Estimated is the number of new keys that started with a count taken
	// from the summary of evicted keys instead of an empty window: evicted
	// keys that came back, and new keys that share the summary's cells
	// with evicted ones.
	Estimated uint64
	// Asleep reports whether the zone sleeps (see Options.SleepAfter).
	Asleep bool
	// Used reports whether the zone took a key in this process. A zone
	// that did not holds only what it restored, if anything: saving it
	// would only rewrite its snapshot.
	Used bool
	// Pending is how many restored keys (see Restore) have not been seen
	// since, and still count: each is claimed by its first request.
	Pending int
}

// Stats returns the zone's counters.
func (z *Zone) Stats() ZoneStats {
	st := ZoneStats{Asleep: z.asleepNow()}
	for i := range z.shards {
		s := &z.shards[i]
		s.Lock()
		st.Keys += len(s.index)
		st.Evictions += s.evictions
		st.Estimated += s.estimated
		st.Used = st.Used || s.born != 0
		s.Unlock()
	}
	if p := z.persist; p != nil {
		p.mu.Lock()
		st.Pending = p.pending
		p.mu.Unlock()
	}
	return st
}

// sweepAll deletes the keys whose window holds no counted request at now and
// returns how many it deleted. The sweeper calls it; tests may too.
func (z *Zone) sweepAll(now time.Time) int {
	t := now.UnixNano()
	removed := 0
	for i := range z.shards {
		removed += z.shards[i].sweep(z, t)
	}
	return removed
}

// sweepEvery is the sweeper: it sweeps every interval until the zone is
// closed, or until it sleeps (see Options.SleepAfter).
func (z *Zone) sweepEvery() {
	tick := time.NewTicker(z.interval)
	defer tick.Stop()
	var emptySince time.Time // zero while the zone holds something
	for {
		select {
		case <-z.stop:
			return
		case <-tick.C:
			t := z.now()
			z.sweepAll(t)
			if z.sleepAfter > 0 {
				if !z.empty(t.UnixNano()) {
					emptySince = time.Time{}
				} else if emptySince.IsZero() {
					emptySince = t
				} else if t.Sub(emptySince) >= z.sleepAfter && z.sleep(t.UnixNano()) {
					return
				}
			}
			if z.evicting == nil || t.Sub(z.last) < z.evictingEvery {
				continue
			}
			if n := z.Stats().Evictions; n > z.reported {
				z.evicting(n - z.reported)
				z.reported, z.last = n, t
			}
		}
	}
}

// empty reports whether the zone holds nothing that counts at t, shard by
// shard (sleep checks it again with every shard locked at once).
func (z *Zone) empty(t int64) bool {
	for i := range z.shards {
		s := &z.shards[i]
		s.Lock()
		held := s.holds(t)
		s.Unlock()
		if held {
			return false
		}
	}
	return true
}

// holds reports whether the shard holds anything that counts at t: a
// key, a denial or a live count of evicted keys. The caller holds s
// locked.
func (s *shard) holds(t int64) bool {
	return len(s.index) > 0 || len(s.denied) > 0 || t < s.evicted.live || len(s.banned) > 0
}

// sleep puts the zone to sleep if it holds nothing that counts at t and
// the host agrees, and reports whether it did; the sweeper then ends.
// Every shard is locked at once (in order, as TakeAll locks them), so no
// key can slip in between the check and the shards' room going to 0,
// after which a new key wakes the zone.
func (z *Zone) sleep(t int64) bool {
	for i := range z.shards {
		z.shards[i].Lock()
	}
	ok := true
	for i := range z.shards {
		if z.shards[i].holds(t) {
			ok = false
			break
		}
	}
	if ok && z.sleepOK != nil {
		ok = z.sleepOK(z)
	}
	if ok {
		for i := range z.shards {
			z.shards[i].room = 0
		}
		atomic.StoreInt32(&z.asleep, 1)
	}
	for i := range z.shards {
		z.shards[i].Unlock()
	}
	return ok
}

// wake tells the host and restarts the sweeper of a sleeping zone. A
// shard with no room calls it, locked, on its first new key; only the
// first shard's call does anything.
func (z *Zone) wake() {
	if !atomic.CompareAndSwapInt32(&z.asleep, 1, 0) {
		return
	}
	select {
	case <-z.stop:
		return // closed: no sweeper, and its host replaced it
	default:
	}
	if z.woken != nil {
		z.woken(z)
	}
	go z.sweepEvery()
}

// asleepNow reports whether the zone sleeps (see Options.SleepAfter).
func (z *Zone) asleepNow() bool { return atomic.LoadInt32(&z.asleep) == 1 }
