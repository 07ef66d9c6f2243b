package resp

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errClosed is returned by a closed client.
var errClosed = errors.New("resp: client closed")

// errPoolTimeout is returned when every connection stayed busy.
var errPoolTimeout = errors.New("resp: timed out waiting for a free connection")

// pool holds the connections to one server: at most cap(sem) open at once,
// dialled on demand, idle ones reused newest first.
type pool struct {
	addr string
	opts *Options
	sem  chan struct{}

	mu     sync.Mutex
	idle   []*conn
	closed bool

	// mux is the shared connection of Options.AutoPipeline; muxMu
	// serialises replacing it.
	muxMu sync.Mutex
	mux   *muxConn
}

func newPool(addr string, opts *Options) *pool {
	return &pool{addr: addr, opts: opts, sem: make(chan struct{}, opts.PoolSize)}
}

// get returns an idle connection or dials one, waiting for a free place
// while the pool is full. fresh skips the idle connections.
func get(ctx context.Context, p *pool, fresh bool) (*conn, error) {
	select {
	case p.sem <- struct{}{}:
	default:
		t := time.NewTimer(p.opts.ReadTimeout)
		select {
		case p.sem <- struct{}{}:
			t.Stop()
		case <-t.C:
			return nil, errPoolTimeout
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.sem
		return nil, errClosed
	}
	if n := len(p.idle); n > 0 && !fresh {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	c, err := dial(ctx, p.addr, p.opts)
	if err != nil {
		<-p.sem
		return nil, err
	}
	return c, nil
}

// shared returns the pool's pipelined connection, dialling a new one if
// there is none or the last one broke.
func shared(ctx context.Context, p *pool) (*muxConn, error) {
	p.muxMu.Lock()
	m := p.mux
	p.muxMu.Unlock()
	if m != nil && !muxBroken(m) {
		return m, nil
	}
	return redial(ctx, p)
}

// redial replaces a missing or broken pipelined connection.
func redial(ctx context.Context, p *pool) (*muxConn, error) {
	p.muxMu.Lock()
	defer p.muxMu.Unlock()
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if p.mux != nil && !muxBroken(p.mux) {
		return p.mux, nil
	}
	c, err := dial(ctx, p.addr, p.opts)
	if err != nil {
		return nil, err
	}
	p.mux = newMux(c, p.opts)
	return p.mux, nil
}

// put returns c to the pool, or closes it if it is broken.
func put(p *pool, c *conn) {
	p.mu.Lock()
	if c.broken || p.closed {
		p.mu.Unlock()
		c.close()
	} else {
		c.reused = true
		p.idle = append(p.idle, c)
		p.mu.Unlock()
	}
	<-p.sem
}

// close closes the idle connections; busy ones close when put back.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
	p.muxMu.Lock()
	if p.mux != nil {
		p.mux.fail(errClosed)
	}
	p.muxMu.Unlock()
}
