package ratelimit

import (
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxKeys is the number of keys a zone tracks when Options.MaxKeys
// is zero: about 10 MB at 10 sub-windows.
const DefaultMaxKeys = 100000

// Options tune a zone's in-memory store.
type Options struct {
	// MaxKeys bounds the keys tracked at once; when a zone is full, a new key
	// evicts an expired or the least recently active of a few sampled keys.
	// Zero means DefaultMaxKeys.
	MaxKeys int
	// SweepInterval is how often keys whose window is empty are deleted.
	// Zero means the rule's window, clamped to [1s, 1m]; negative disables
	// the sweeper (eviction still bounds memory).
	SweepInterval time.Duration
	// Now is the clock of the sweeper; nil means time.Now.
	Now func() time.Time
}

// zoneIDs orders zones for lock acquisition when one request takes several.
var zoneIDs uint64

// Zone is one named rule with the in-memory state of every key it limits.
// It is safe for concurrent use.
type Zone struct {
	name string
	rule Rule
	id   uint64

	k      int64 // sub-windows per window
	span   int64 // T in nanoseconds
	window int64 // W in nanoseconds
	// reach is how many sub-windows a request stays counted for: k+1 for
	// the sliding algorithms, 1 for Fixed.
	reach int64
	// weighted is set for Sliding, whose leaving sub-window counts in part.
	weighted bool
	limit    float64
	cost     float64
	stride   int // uint32 per slot: k+1 counters and their sum
	zeros    []uint32

	seed     maphash.Seed
	mask     uint64
	shards   []shard
	perShard int

	stop     chan struct{}
	stopOnce sync.Once
}

// NewZone validates rule and returns a zone with an empty store. Call Close
// to stop its sweeper.
func NewZone(name string, rule Rule, opts Options) (*Zone, error) {
	if err := rule.Normalize(); err != nil {
		return nil, fmt.Errorf("zone %q: %w", name, err)
	}
	if opts.MaxKeys < 0 {
		return nil, fmt.Errorf("zone %q: max_keys must not be negative, got %d", name, opts.MaxKeys)
	}
	maxKeys := opts.MaxKeys
	if maxKeys == 0 {
		maxKeys = DefaultMaxKeys
	}
	z := &Zone{
		name:     name,
		rule:     rule,
		id:       atomic.AddUint64(&zoneIDs, 1),
		k:        int64(rule.Buckets()),
		span:     int64(rule.SubWindow),
		window:   int64(rule.Window),
		weighted: rule.Algorithm == Sliding,
		limit:    float64(rule.Limit),
		cost:     float64(rule.Cost),
		seed:     maphash.MakeSeed(),
		stop:     make(chan struct{}),
	}
	z.reach = z.k + 1
	if rule.Algorithm == Fixed {
		z.reach = 1
	}
	z.stride = int(z.k) + 2
	z.zeros = make([]uint32, z.stride)

	// Shards: a power of two, at most 64, with at least 1024 keys each so
	// that an uneven hash does not evict early in small zones.
	n := 1
	for n < 64 && maxKeys/(n*2) >= 1024 {
		n *= 2
	}
	z.shards = make([]shard, n)
	z.mask = uint64(n - 1)
	z.perShard = maxKeys / n
	for i := range z.shards {
		z.shards[i].index = make(map[string]uint32)
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
	if interval > 0 {
		now := opts.Now
		if now == nil {
			now = time.Now
		}
		go z.sweepEvery(interval, now)
	}
	return z, nil
}

// Name returns the zone's name.
func (z *Zone) Name() string { return z.name }

// Rule returns the zone's normalized rule.
func (z *Zone) Rule() Rule { return z.rule }

// Close stops the sweeper. The zone still answers afterwards.
func (z *Zone) Close() {
	z.stopOnce.Do(func() { close(z.stop) })
}

// Take decides one request on key at now and, if it is allowed, counts it.
func (z *Zone) Take(key string, now time.Time) Decision {
	t := now.UnixNano()
	s := z.shardFor(key)
	s.mu.Lock()
	d := z.take(s, key, t, true)
	s.mu.Unlock()
	return d
}

// take decides on key in the locked shard s, and counts the request when it
// is allowed and commit is set.
func (z *Zone) take(s *shard, key string, t int64, commit bool) Decision {
	if z.rule.Algorithm == Log {
		return z.takeLog(s, s.slot(z, key, t), t, commit)
	}
	return z.takeBuckets(s, s.slot(z, key, t/z.span), t, commit)
}

// shardFor returns the shard that holds key.
func (z *Zone) shardFor(key string) *shard {
	return &z.shards[z.shardIndex(key)]
}

// shardIndex returns the index of the shard that holds key.
func (z *Zone) shardIndex(key string) int {
	if z.mask == 0 {
		return 0
	}
	return int(maphash.String(z.seed, key) & z.mask)
}

// shardAt returns the shard named by the low six bits of a lock rank.
func (z *Zone) shardAt(rank uint64) *shard { return &z.shards[rank&63] }

// Len returns the number of keys the zone tracks.
func (z *Zone) Len() int {
	n := 0
	for i := range z.shards {
		s := &z.shards[i]
		s.mu.Lock()
		n += len(s.index)
		s.mu.Unlock()
	}
	return n
}

// Sweep deletes the keys whose window holds no counted request at now and
// returns how many it deleted. The sweeper calls it; tests may too.
func (z *Zone) Sweep(now time.Time) int {
	c := now.UnixNano()
	if z.rule.Algorithm != Log {
		c /= z.span
	}
	removed := 0
	for i := range z.shards {
		removed += z.shards[i].sweep(z, c)
	}
	return removed
}

// expired reports whether a key whose newest sub-window (or timestamp, for
// Log) is newest counts nothing at c.
func (z *Zone) expired(newest, c int64) bool {
	if z.rule.Algorithm == Log {
		return newest+z.window <= c
	}
	return newest+z.reach <= c
}

func (z *Zone) sweepEvery(interval time.Duration, now func() time.Time) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-z.stop:
			return
		case <-tick.C:
			z.Sweep(now())
		}
	}
}
