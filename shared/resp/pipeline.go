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
	ints   bool   // the reply is an array of integers, read by readInts
	// rep holds the Reply of a command other than ints. It is an
	// interface rather than a Reply because yaegi mis-builds a struct
	// that holds the recursive Reply.
	rep  interface{}
	vals []int64 // the reply of an ints command
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

// muxDo queues cmd and waits for the reply (see await).
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
	err := await(ctx, m, cl)
	if ints && err == nil {
		return Reply{Kind: '*', ints: cl.vals}, nil
	}
	rep, _ := cl.rep.(Reply)
	return rep, err
}

// sharedInts runs cmd, whose reply is an array of integers, on p's
// pipelined connection: onShared and muxDo in one, without a Reply, for
// the command of every decision. It reports, as onShared does, whether
// the command should be tried again on a new connection. A missing or
// broken connection goes to sharedIntsDial.
func sharedInts(ctx context.Context, p *pool, cmd string, fresh bool) ([]int64, error, bool) {
	p.muxMu.Lock()
	m := p.mux
	p.muxMu.Unlock()
	if m == nil {
		return sharedIntsDial(ctx, p, cmd, fresh)
	}
	cl := &call{cmd: cmd, ints: true, done: make(chan struct{})}
	m.mu.Lock()
	ok, served := m.err == nil, m.replies > 0
	if ok {
		m.queue = append(m.queue, cl)
	}
	m.mu.Unlock()
	if !ok {
		return sharedIntsDial(ctx, p, cmd, fresh)
	}
	select {
	case m.wake <- struct{}{}:
	default:
	}
	err := await(ctx, m, cl)
	return cl.vals, err, err != nil && served && !fresh && idleClosed(err) && muxBroken(m)
}

// sharedIntsDial is sharedInts through onShared, which dials a new
// connection when there is none or the last one broke.
func sharedIntsDial(ctx context.Context, p *pool, cmd string, fresh bool) ([]int64, error, bool) {
	rep, err, retry := onShared(ctx, p, false, true, cmd, fresh)
	return rep.ints, err, retry
}

// await waits for the reply of cl, queued on m, at most the write and
// read timeouts (or until the context's deadline, if sooner). A command
// that times out breaks the connection: a server that slow is treated
// like a dead one.
func await(ctx context.Context, m *muxConn, cl *call) error {
	wait := m.opts.WriteTimeout + m.opts.ReadTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		wait = time.Until(d)
	}
	// No defer: under yaegi one costs more than the rest of this function.
	t := time.NewTimer(wait)
	select {
	case <-cl.done:
		t.Stop()
		return cl.err
	case <-t.C:
		m.fail(timeoutError{})
		<-cl.done
		return timeoutError{}
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

func (m *muxConn) writeLoop() {
	// Every variable is declared once, out of the loop: under yaegi a
	// declaration allocates each time it runs.
	var batch []*call
	var b []byte
	var err error
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
		b = m.c.wbuf[:0]
		for i := range batch {
			if batch[i].asking {
				b = append(b, askingCmd...)
			}
			b = append(b, batch[i].cmd...)
			batch[i] = nil
		}
		m.c.wbuf = b
		// send, inlined: one call less on every write.
		if err = m.c.nc.SetWriteDeadline(time.Now().Add(m.opts.WriteTimeout)); err == nil {
			_, err = m.c.nc.Write(b)
		}
		if err != nil {
			m.fail(err)
			return
		}
	}
}

// readLoop reads replies as they come (without a deadline: callers time
// themselves out) and completes the oldest pending call with each. A
// closed connection ends it at once, so a restarted server is noticed
// before the next command. Its work per reply is inline: under yaegi the
// loop's locals are allocated once, a call's on every call.
func (m *muxConn) readLoop() {
	// Every variable is declared once, out of the loop: under yaegi a
	// declaration allocates each time it runs.
	var asked *call // the call whose ASKING reply was read
	var cl *call
	var rep Reply
	var vals []int64
	var err, rerr error
	var line []byte
	var isReply bool
	for {
		// Wait for a reply to begin, then let the oldest pending call say
		// how to read it: a reply comes only after its command was
		// written, so it is pending by then, and only the reader removes
		// it. A reply with none pending breaks the connection.
		if _, err = m.c.br.Peek(1); err != nil {
			m.fail(err)
			return
		}
		m.mu.Lock()
		cl = nil
		if len(m.pending) > 0 {
			cl = m.pending[0]
		}
		m.mu.Unlock()
		err = nil
		if cl != nil && cl.ints && (!cl.asking || asked == cl) {
			// readInts, inlined: one call less on every reply.
			line, rerr = m.c.br.ReadSlice('\n')
			if rerr != nil || len(line) != 4 || line[0] != '*' || line[1] < '1' || line[1] > '9' || line[2] != '\r' {
				vals, err = readIntsHead(m.c.br, line, rerr)
			} else if vals = bufferedInts(m.c.br, int(line[1]-'0')); vals == nil {
				vals, err = readIntsRest(m.c.br, int64(line[1]-'0'))
			}
		} else if rep, err = readReply(m.c.br); err == nil && rep.Kind == '-' {
			err = &Error{Msg: rep.Str}
		}
		if _, isReply = err.(*Error); err != nil && !isReply {
			m.fail(err)
			return
		}
		if cl == nil {
			m.fail(ErrProtocol) // a reply nobody asked for
			return
		}
		m.mu.Lock()
		if len(m.pending) == 0 || m.pending[0] != cl {
			// The connection failed meanwhile (a timeout), and so did cl.
			m.mu.Unlock()
			return
		}
		if cl.asking && asked != cl {
			// That was ASKING's reply; the command's own follows.
			m.mu.Unlock()
			asked, cl.askErr = cl, err
			continue
		}
		m.pending[0] = nil
		m.pending = m.pending[1:]
		m.replies++
		m.mu.Unlock()
		if cl.ints {
			cl.vals = vals
		} else {
			cl.rep = rep
		}
		if err != nil {
			cl.err = afterAsking(cl.askErr, err)
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
