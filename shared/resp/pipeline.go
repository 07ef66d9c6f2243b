package resp

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// muxConn is one connection shared by concurrent commands (Options.
// AutoPipeline): commands queued while a write is in flight go out
// together in the next write, and a reader goroutine hands the replies to
// their callers in order. Fewer, larger writes and reads cut the system
// calls per command on both ends, which is what bounds an unpipelined
// client on a small machine.
type muxConn struct {
	c    *conn
	opts *Options
	wake chan struct{} // tells the writer the queue is not empty

	mu      sync.Mutex
	queue   []*call // waiting to be written
	pending []*call // written, waiting for their replies, oldest first
	err     error   // set once; the connection is then closed
	replies int64   // replies read so far
}

// call is one command on a muxConn.
type call struct {
	cmd    string // encoded
	asking bool   // preceded by ASKING, whose reply is read first
	askErr error  // ASKING's error reply, if it got one
	ints   bool   // the reply is read by readInts
	// rep holds the Reply. It is an interface rather than a Reply
	// because yaegi mis-builds a struct that holds the recursive Reply.
	rep  interface{}
	err  error
	done chan struct{}
}

// timeoutError is what a command that waited past its read timeout on a
// shared connection gets; like a net.Error it reports Timeout.
type timeoutError struct{}

func (timeoutError) Error() string   { return "resp: read timeout on a pipelined connection" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func newMux(c *conn, opts *Options) *muxConn {
	m := &muxConn{c: c, opts: opts, wake: make(chan struct{}, 1)}
	go m.writeLoop()
	go m.readLoop()
	return m
}

// muxDo queues cmd and waits for the reply, at most the read timeout (or
// the context's deadline, if sooner). A command that times out breaks the
// connection: a server that slow is treated like a dead one.
func muxDo(m *muxConn, ctx context.Context, asking, ints bool, cmd string) (Reply, error) {
	cl := &call{cmd: cmd, asking: asking, ints: ints, done: make(chan struct{})}
	m.mu.Lock()
	if m.err != nil {
		err := m.err
		m.mu.Unlock()
		return Reply{}, err
	}
	m.queue = append(m.queue, cl)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	wait := m.opts.WriteTimeout + m.opts.ReadTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		wait = time.Until(d)
	}
	// No defer: under yaegi one costs more than the rest of this function.
	t := time.NewTimer(wait)
	select {
	case <-cl.done:
		t.Stop()
		rep, _ := cl.rep.(Reply)
		return rep, cl.err
	case <-t.C:
		m.fail(timeoutError{})
		<-cl.done
		return Reply{}, timeoutError{}
	case <-ctx.Done():
		t.Stop()
		return Reply{}, ctx.Err()
	}
}

func (m *muxConn) writeLoop() {
	var batch []*call
	for range m.wake {
		// Let the callers that the last replies woke queue their next
		// command first, so that it joins this write instead of costing
		// one of its own (about 10% more decisions/s at 50 callers).
		runtime.Gosched()
		m.mu.Lock()
		if m.err != nil {
			m.mu.Unlock()
			return
		}
		batch = append(batch[:0], m.queue...)
		m.queue = m.queue[:0]
		m.pending = append(m.pending, batch...)
		m.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		b := m.c.wbuf[:0]
		for _, cl := range batch {
			if cl.asking {
				b = append(b, askingCmd...)
			}
			b = append(b, cl.cmd...)
		}
		m.c.wbuf = b
		if err := send(m.c, time.Now().Add(m.opts.WriteTimeout), b); err != nil {
			m.fail(err)
			return
		}
		for i := range batch {
			batch[i] = nil
		}
	}
}

// readLoop reads replies as they come (without a deadline: callers time
// themselves out) and completes the oldest pending call with each. A
// closed connection ends it at once, so a restarted server is noticed
// before the next command.
func (m *muxConn) readLoop() {
	for {
		// The oldest pending call says how to read; with none pending a
		// reply is unexpected, read generically to notice a closed conn.
		m.mu.Lock()
		ints := len(m.pending) > 0 && m.pending[0].ints && !m.pending[0].asking
		m.mu.Unlock()
		var rep Reply
		var err error
		if ints {
			rep, err = readInts(m.c.br)
		} else {
			rep, err = readReply(m.c.br)
		}
		if err != nil {
			m.fail(err)
			return
		}
		m.mu.Lock()
		if len(m.pending) == 0 {
			m.mu.Unlock()
			m.fail(ErrProtocol) // a reply nobody asked for
			return
		}
		cl := m.pending[0]
		if cl.asking {
			// That was ASKING's reply; the command's own follows.
			cl.asking = false
			if rep.Kind == '-' {
				cl.askErr = &Error{Msg: rep.Str}
			}
			m.mu.Unlock()
			continue
		}
		m.pending[0] = nil
		m.pending = m.pending[1:]
		m.replies++
		m.mu.Unlock()
		cl.rep = rep
		if rep.Kind == '-' {
			cl.err = afterAsking(cl.askErr, &Error{Msg: rep.Str})
		}
		close(cl.done)
	}
}

// fail breaks the connection: it is closed and every queued or pending
// call fails with err.
func (m *muxConn) fail(err error) {
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return
	}
	m.err = err
	calls := make([]*call, 0, len(m.queue)+len(m.pending))
	calls = append(calls, m.queue...)
	calls = append(calls, m.pending...)
	m.queue = m.queue[:0]
	m.pending = m.pending[:0]
	m.mu.Unlock()
	m.c.close()
	select { // the writer wakes, sees err and ends
	case m.wake <- struct{}{}:
	default:
	}
	for _, cl := range calls {
		cl.err = err
		close(cl.done)
	}
}

// served reports whether the connection has answered a command, so that
// a failure on it may be a server-side close rather than an outage.
func served(m *muxConn) bool {
	m.mu.Lock()
	n := m.replies
	m.mu.Unlock()
	return n > 0
}

// muxBroken reports whether the connection failed.
func muxBroken(m *muxConn) bool {
	m.mu.Lock()
	broken := m.err != nil
	m.mu.Unlock()
	return broken
}
