package lease

import (
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// Defaults of Options.
const (
	// DefaultMaxUnits bounds one lease.
	DefaultMaxUnits = 4096
	// DefaultSlots is how many keys a table can hold leases for at once.
	DefaultSlots = 512
	// HotAfter is how many requests of a key this instance must see in
	// one sub-window before it asks for a lease.
	HotAfter = 8
	// giveBackTimeout bounds a call that gives units back.
	giveBackTimeout = 2 * time.Second
	// leaseHorizon bounds the time of demand one lease asks for: when the
	// traffic of a key moves to another instance, what the lease here
	// holds idle is at most that much of it, until its sub-window ends.
	leaseHorizon = 250 * time.Millisecond
)

// Options configure a Table.
type Options struct {
	// MaxUnits bounds the units one lease asks for; zero means
	// DefaultMaxUnits.
	MaxUnits int64
	// Slots is rounded up to a power of two; zero means DefaultSlots. A
	// key whose slot another key's live lease holds is decided per
	// request.
	Slots int
	// Now is the clock a request re-reads after waiting for another's
	// lease call; nil means time.Now.
	Now func() time.Time
	// KeyCall is the store's call prepared for the zone through the
	// guard (see redisstore.TakeKey), which a request that asks for no
	// lease makes; nil means the guard's Take.
	KeyCall *redisstore.KeyCall
}

// Table holds this instance's leases on the keys of one zone whose
// counts a Guard keeps in Redis. It is safe for concurrent use.
type Table struct {
	zone    *ratelimit.Zone
	guard   *guard.Guard
	keyCall *redisstore.KeyCall
	limit   int64 // the rule's
	cost    int64
	span    int64 // the sub-window, in nanoseconds: demand is counted per span; two grants whose receipts it divides alike share one
	max     int64
	base    time.Time // monotonic times are nanoseconds since base
	now     func() time.Time
	seed    maphash.Seed
	mask    uint64
	slots   []slot
	// slotOf holds &slots[i] at i, for Take: interpreted, an element of
	// slots indexed is copied into a frame slot of a slot's size, one of
	// slotOf is a pointer.
	slotOf []*slot
	// after starts a timer that gives back what a lease left; tests
	// replace it to run on a simulated clock. async runs a give-back
	// off the request's path; simulations run it at once.
	after  func(d time.Duration, f func()) func() bool
	async  func(f func())
	closed int32

	leases       uint64
	granted      uint64
	returned     uint64
	endedByReset uint64
}

// slot is the lease of one key, and that key's demand. Its mutex is never
// held across a call; it is embedded, so that s.Lock() costs Take one
// frame slot interpreted, where s.Lock() costs two.
type slot struct {
	sync.Mutex
	keyed

	// The lease in hand: units unspent, until expires; left what Redis had
	// left after it, resetAt when the window empties.
	units   int64
	expires int64
	left    int64
	resetAt int64
	timers  uint64 // expiry timers set, so that an earlier lease's timer does nothing
	stop    func() bool

	// pending is closed when the lease call in flight for key returns.
	// low is the units left at which a request renews the lease in hand
	// while the others spend them (-1: no renewal, one is under way or
	// the units should last).
	pending chan struct{}
	low     int64
	// saved counts the requests admitted from the slot's leases.
	saved uint64
}

// keyed is the key a slot holds and what the slot keeps of that key that
// another key starts afresh: a struct of its own, so that a new key is one
// assignment (see coldMiss), where one a field would cost every request of
// a cold key some 10 allocations interpreted.
type keyed struct {
	key   string
	limit int64

	// grant is the decision that granted the lease in hand (its receipt
	// names their sub-window and the key's generation), granted the units
	// granted in that sub-window in all. grant and granted outlive a lease
	// spent to the last unit, until the next one: they say what it spent
	// (see endIfReset). confirmed is how many of the granted units were
	// spent before the last reply that found the key still in the lease's
	// generation: a reset came after those.
	grant     ratelimit.Decision
	granted   int64
	confirmed int64

	// period starts the current sub-window-long period of demand; seen
	// counts the key's requests in it, prev those of the one before. size
	// is the last lease granted and early reports that it ran out before
	// it expired.
	period int64
	seen   int64
	prev   int64
	size   int64
	early  bool
	// edge is when the last lease expired or expires: the end of a
	// sub-window of the server's as this instance sees it; 0 for none.
	edge int64
}

// NewTable returns a table of leases on z's keys, decided through g, whose
// store must be Redis. Close gives back what it holds.
func NewTable(z *ratelimit.Zone, g *guard.Guard, opts Options) (*Table, error) {
	if z == nil || g == nil {
		return nil, errors.New("lease: a table needs a zone and a guard")
	}
	if opts.MaxUnits < 0 || opts.Slots < 0 {
		return nil, errors.New("lease: options must not be negative")
	}
	if opts.MaxUnits == 0 {
		opts.MaxUnits = DefaultMaxUnits
	}
	if opts.Slots == 0 {
		opts.Slots = DefaultSlots
	}
	n := 1
	for n < opts.Slots {
		n *= 2
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := z.Rule()
	t := &Table{
		zone:    z,
		guard:   g,
		keyCall: opts.KeyCall,
		limit:   r.Limit,
		cost:    r.Cost,
		span:    int64(r.SubWindow),
		max:     opts.MaxUnits,
		base:    time.Now(),
		now:     opts.Now,
		seed:    maphash.MakeSeed(),
		mask:    uint64(n - 1),
		slots:   make([]slot, n),
		after:   func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
		async:   func(f func()) { go f() },
	}
	if r.Algorithm == ratelimit.Log {
		t.max = 0 // Redis grants a log rule nothing: never ask
	}
	t.slotOf = make([]*slot, n)
	for i := range t.slots {
		t.slotOf[i] = &t.slots[i]
	}
	return t, nil
}

// Zone returns the zone whose keys t leases.
func (t *Table) Zone() *ratelimit.Zone { return t.zone }

// Stats are a table's counters since it was made.
type Stats struct {
	// Leases counts the calls that Redis granted units in.
	Leases uint64
	// Granted counts the units those calls granted.
	Granted uint64
	// Returned counts the units given back unspent.
	Returned uint64
	// Saved counts the requests admitted from a lease: Redis calls not
	// made.
	Saved uint64
	// EndedByReset counts the leases ended because their key was reset or
	// lost in Redis while they ran.
	EndedByReset uint64
}

// Stats returns t's counters.
func (t *Table) Stats() Stats {
	return Stats{
		Leases:       atomic.LoadUint64(&t.leases),
		Granted:      atomic.LoadUint64(&t.granted),
		Returned:     atomic.LoadUint64(&t.returned),
		Saved:        t.saved(),
		EndedByReset: atomic.LoadUint64(&t.endedByReset),
	}
}

// saved sums the slots' requests admitted from a lease: counted under
// each slot's lock, so that spending a unit makes no call more.
func (t *Table) saved() uint64 {
	var n uint64
	for i := range t.slots {
		s := &t.slots[i]
		s.Lock()
		n += s.saved
		s.Unlock()
	}
	return n
}

// Held is what this instance holds of one key's lease.
type Held struct {
	// Units is how many units of the lease are unspent.
	Units int64
	// ExpiresIn is how long they may still be spent.
	ExpiresIn time.Duration
	// Granted is how many units Redis granted this instance's leases on
	// the key in the lease's sub-window, spent or not: what an operator's
	// reset keeps counted in the key's fresh count for this instance (see
	// redisstore.Store.Forget).
	Granted int64
}

// Inspect returns the lease this instance holds on key, if any.
func (t *Table) Inspect(key string) (Held, bool) {
	mono := int64(t.now().Sub(t.base))
	s := &t.slots[maphash.String(t.seed, key)&t.mask]
	s.Lock()
	defer s.Unlock()
	if s.key != key || s.units <= 0 || mono >= s.expires {
		return Held{}, false
	}
	return Held{Units: s.units, ExpiresIn: time.Duration(s.expires - mono), Granted: s.granted}, true
}

// Close ends every lease, giving back what they left, and makes t decide
// every later request per request: a reload or a changed rule drops
// leases. It waits for the calls that give back, each bounded.
func (t *Table) Close() {
	if !atomic.CompareAndSwapInt32(&t.closed, 0, 1) {
		return
	}
	var wg sync.WaitGroup
	for i := range t.slots {
		s := &t.slots[i]
		s.Lock()
		back := takeBack(t, s)
		s.Unlock()
		if back.use.Unspent > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				back.send(t)
			}()
		}
	}
	wg.Wait()
}

// Forget ends this instance's lease on key without giving its units back,
// before the caller resets the key (an operator's reset: see
// redisstore.Store.Forget), and returns the units the lease was
// granted in its sub-window, which the reset must not keep counted in
// the fresh count; 0 when there was no live lease.
func (t *Table) Forget(key string) int64 {
	mono := int64(t.now().Sub(t.base))
	s := &t.slots[maphash.String(t.seed, key)&t.mask]
	s.Lock()
	defer s.Unlock()
	if s.key != key {
		return 0
	}
	var own int64
	if s.granted > 0 && mono < s.expires {
		own = s.granted
	}
	takeBack(t, s)
	s.size, s.early, s.granted, s.confirmed = 0, false, 0, 0
	s.grant = ratelimit.Decision{}
	return own
}
