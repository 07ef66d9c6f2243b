package inflight

import (
	"context"
	"sync"
	"time"
)

// releaseQueue is how many releases may wait for Redis. A release that
// finds the queue full is sent by its request itself: under a release
// rate Redis cannot keep up with, requests slow down rather than leave
// their slots taken until the TTL.
const releaseQueue = 4096

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

	releases chan release
	stop     chan struct{}
}

type release struct{ set, member string }

func newHolder(remote Remote, ttl time.Duration, log func(error)) *holder {
	h := &holder{
		remote:   remote,
		ttl:      ttl,
		log:      log,
		sets:     make(map[string]map[string]struct{}),
		releases: make(chan release, releaseQueue),
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
	default:
		// Redis is slower than the release rate: this request waits for
		// its own release rather than leave the slot taken until the TTL.
		h.send(r)
	}
}

// releaseLoop sends the queued releases, a batch at a time: each set's
// members waiting in the queue go in one call.
func (h *holder) releaseLoop() {
	batch := make(map[string][]string)
	for {
		select {
		case r := <-h.releases:
			batch[r.set] = append(batch[r.set], r.member)
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
		for set, members := range batch {
			h.sendAll(set, members)
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
	if h.closing && len(h.sets) == 0 && len(h.releases) == 0 {
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
