package inflight

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// releaseQueue is how many releases may wait for Redis in the queue the
// workers read. A release that finds it full waits in the overflow.
const releaseQueue = 4096

// overflowMax bounds the releases waiting in the overflow, so that a Redis
// that cannot keep up costs bounded memory. A release past it is dropped:
// its slot stays taken until the TTL, which refuses more, never admits
// more (a variable for the tests).
var overflowMax = 65536

// releaseWorkers send the releases: several, so that a pipelining client
// sends them together.
const releaseWorkers = 4

// releaseBatch bounds the releases one call sends: a worker takes what
// waits in the queue, up to this many, and frees each set's members in
// one call, so that a hot key's releases keep up with its takes.
const releaseBatch = 256

// holder renews the Redis slots this instance holds while their requests
// run, every TTL/3, in one call per key, and releases them off the
// requests' path.
type holder struct {
	remote Remote
	ttl    time.Duration
	log    func(error)

	mu      sync.Mutex
	sets    map[string]map[string]struct{} // set -> members held
	closing bool
	stopped bool

	// overflow holds, by set, the releases that found the queue full,
	// overflowN of them; the workers take them with their next batch,
	// woken by kick.
	overflow  map[string][]string
	overflowN int64  // written under mu, read atomically
	dropped   uint64 // releases past overflowMax, under mu
	// dropping is set from the first drop until the overflow drains,
	// so that an episode of drops is logged once.
	dropping bool

	releases chan release
	kick     chan struct{}
	stop     chan struct{}
}

type release struct{ set, member string }

func newHolder(remote Remote, ttl time.Duration, log func(error)) *holder {
	h := &holder{
		remote:   remote,
		ttl:      ttl,
		log:      log,
		sets:     make(map[string]map[string]struct{}),
		overflow: make(map[string][]string),
		releases: make(chan release, releaseQueue),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	go h.renewLoop()
	for i := 0; i < releaseWorkers; i++ {
		go h.releaseLoop()
	}
	return h
}

// add records member of set as held, to renew.
func (h *holder) add(set, member string) {
	h.mu.Lock()
	m := h.sets[set]
	if m == nil {
		m = make(map[string]struct{}, 1)
		h.sets[set] = m
	}
	m[member] = struct{}{}
	h.mu.Unlock()
}

// forget stops renewing member of set.
func (h *holder) forget(set, member string) {
	h.mu.Lock()
	if m := h.sets[set]; m != nil {
		delete(m, member)
		if len(m) == 0 {
			delete(h.sets, set)
		}
	}
	h.mu.Unlock()
}

// release forgets member of set and has it released in the background.
func (h *holder) release(set, member string) {
	h.forget(set, member)
	r := release{set, member}
	select {
	case <-h.stop:
		// Stopped (closed, nothing held then): a request that ran
		// across it releases on its own.
		go h.send(r)
		return
	default:
	}
	select {
	case h.releases <- r:
		return
	default:
	}
	// Redis is slower than the release rate. The release waits in the
	// overflow rather than hold the response, or is dropped past its
	// bound and the slot freed by its TTL.
	h.mu.Lock()
	if h.overflowN >= int64(overflowMax) {
		h.dropped++
		first := !h.dropping
		h.dropping = true
		h.mu.Unlock()
		if first && h.log != nil {
			h.log(errReleasesDropped)
		}
		return
	}
	h.overflow[set] = append(h.overflow[set], member)
	atomic.AddInt64(&h.overflowN, 1)
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// errReleasesDropped is logged when releases begin to be dropped.
var errReleasesDropped = errors.New("in-flight slots: Redis is too slow for the releases; more than " + strconv.Itoa(overflowMax) + " wait, so later ones are dropped and their slots freed by their TTL")

// takeOverflow moves the releases of the overflow into batch.
func (h *holder) takeOverflow(batch map[string][]string) {
	if atomic.LoadInt64(&h.overflowN) == 0 {
		return
	}
	h.mu.Lock()
	for set, members := range h.overflow {
		batch[set] = append(batch[set], members...)
		delete(h.overflow, set)
	}
	atomic.StoreInt64(&h.overflowN, 0)
	h.dropping = false
	h.mu.Unlock()
}

// releaseLoop sends the queued releases, a batch at a time: each set's
// members waiting in the queue go in one call, and with them those of the
// overflow, whatever their number.
func (h *holder) releaseLoop() {
	batch := make(map[string][]string)
	for {
		select {
		case r := <-h.releases:
			batch[r.set] = append(batch[r.set], r.member)
		case <-h.kick:
		case <-h.stop:
			return
		}
	more:
		for n := 1; n < releaseBatch; n++ {
			select {
			case r := <-h.releases:
				batch[r.set] = append(batch[r.set], r.member)
			default:
				break more
			}
		}
		h.takeOverflow(batch)
		for set, members := range batch {
			for len(members) > 0 {
				n := len(members)
				if n > releaseBatch {
					n = releaseBatch // no min builtin (see the package documentation)
				}
				h.sendAll(set, members[:n])
				members = members[n:]
			}
			delete(batch, set)
		}
	}
}

// send releases r in Redis.
func (h *holder) send(r release) { h.sendAll(r.set, []string{r.member}) }

// sendAll releases members of set in Redis, within a third of the TTL.
func (h *holder) sendAll(set string, members []string) {
	ctx, cancel := context.WithTimeout(context.Background(), h.ttl/3)
	err := h.remote.Release(ctx, set, members...)
	cancel()
	if err != nil && h.log != nil {
		h.log(err)
	}
}

func (h *holder) renewLoop() {
	t := time.NewTicker(h.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-h.stop:
			return
		}
		if h.renew() {
			return
		}
	}
}

// renew renews every slot held, one call per key, forgets those Redis
// no longer holds, and reports whether the holder stopped (closed, with
// nothing left to renew or release).
func (h *holder) renew() bool {
	h.mu.Lock()
	if h.closing && len(h.sets) == 0 && len(h.releases) == 0 && h.overflowN == 0 {
		h.stopped = true
		close(h.stop)
		h.mu.Unlock()
		return true
	}
	batch := make(map[string][]string, len(h.sets))
	for set, m := range h.sets {
		members := make([]string, 0, len(m))
		for member := range m {
			members = append(members, member)
		}
		batch[set] = members
	}
	h.mu.Unlock()
	for set, members := range batch {
		ctx, cancel := context.WithTimeout(context.Background(), h.ttl/3)
		alive, err := h.remote.Renew(ctx, set, h.ttl, members)
		cancel()
		if err != nil {
			// Kept: the next renewal tries again, and Redis frees
			// them after the TTL if none gets through.
			if h.log != nil {
				h.log(err)
			}
			continue
		}
		for i, ok := range alive {
			if !ok {
				// Reset by an operator, or expired: the request runs
				// on without it.
				h.forget(set, members[i])
			}
		}
	}
	return false
}

// close makes the holder stop once nothing is held.
func (h *holder) close() {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
}
