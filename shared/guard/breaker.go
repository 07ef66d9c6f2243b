package guard

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// breaker is a circuit breaker in front of a remote store. It opens on the
// first failure, so requests stop waiting for a dead or slow server and
// take the failure policy at once; while it is open a single background
// probe asks the server every interval and closes it on the first answer.
type breaker struct {
	isOpen   int32  // 1 while open; read on every request
	signals  *int64 // the guard's word (see Signals): isOpen is added to it
	probe    func(context.Context) error
	interval time.Duration
	timeout  time.Duration
	onClose  func(down time.Duration)

	mu       sync.Mutex
	openedAt time.Time
	probing  bool
	stop     chan struct{}
	stopped  bool

	// idle, when positive, ends the probe once activity has not changed
	// for that long: the breaker then closes, unproven, so the next
	// request tries the store again (and trips it again if it still
	// fails) instead of a probe running for a store nobody uses.
	idle     time.Duration
	activity func() uint64
}

func newBreaker(probe func(context.Context) error, interval, timeout time.Duration, onClose func(time.Duration), signals *int64) *breaker {
	return &breaker{probe: probe, interval: interval, timeout: timeout, onClose: onClose, signals: signals, stop: make(chan struct{})}
}

// open reports whether requests should skip the remote store.
func (b *breaker) open() bool { return atomic.LoadInt32(&b.isOpen) == 1 }

// setOpen sets isOpen to v, 0 or 1, and the guard's word by as much as
// it changed. b.mu is held.
func (b *breaker) setOpen(v int32) {
	if old := atomic.SwapInt32(&b.isOpen, v); old != v {
		atomic.AddInt64(b.signals, int64(v-old))
	}
}

// trip opens the breaker and starts the probe unless it runs already. It
// reports whether this call opened it.
func (b *breaker) trip() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || b.probing {
		return false
	}
	b.setOpen(1)
	b.openedAt = time.Now()
	b.probing = true
	go b.probeLoop()
	return true
}

func (b *breaker) probeLoop() {
	t := time.NewTicker(b.interval)
	defer t.Stop()
	var last uint64
	var quiet time.Duration
	if b.idle > 0 {
		last = b.activity()
	}
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			if b.probeOnce() {
				return
			}
			if b.idle <= 0 {
				continue
			}
			if n := b.activity(); n != last {
				last, quiet = n, 0
			} else if quiet += b.interval; quiet >= b.idle {
				b.rest()
				return
			}
		}
	}
}

// rest ends an idle probe: the breaker closes without proof, and the next
// request tries the store.
func (b *breaker) rest() {
	b.mu.Lock()
	b.setOpen(0)
	b.probing = false
	b.mu.Unlock()
}

// probeOnce asks the server once and closes the breaker if it answered.
func (b *breaker) probeOnce() bool {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	err := b.probe(ctx)
	cancel()
	if err != nil {
		return false
	}
	b.mu.Lock()
	down := time.Since(b.openedAt)
	b.setOpen(0)
	b.probing = false
	b.mu.Unlock()
	if b.onClose != nil {
		b.onClose(down)
	}
	return true
}

// close stops the probe for good; the breaker stays as it is.
func (b *breaker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped {
		b.stopped = true
		close(b.stop)
	}
}
