package resp

import (
	"context"
	"errors"
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
//
// A caller of sharedInts that finds the connection idle writes its own
// command (the common case at low concurrency: no goroutine hop); under
// concurrency, commands go to the writer goroutine, which writes them in
// batches until the queue is empty. No caller arms a timer: a watchdog goroutine
// breaks the connection when its oldest command has waited past the
// write and read timeouts (see watch).
type muxConn struct {
	c    *conn
	opts *Options
	wake chan struct{} // hands the write side to the writer goroutine

	// The mutex guards the fields below. It is embedded, so that
	// m.Lock() costs sharedInts one frame slot interpreted, where
	// m.Lock() costs two.
	sync.Mutex
	queue   []*call // waiting to be written
	pending []*call // being written or written, waiting for their replies, oldest first
	writing bool    // a caller or the writer goroutine owns the write side
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
	// interface rather than a Reply (see the package documentation).
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
	go m.watch()
	return m
}

// muxDo queues cmd for the writer goroutine and waits for the reply (see
// await).
func muxDo(ctx context.Context, m *muxConn, asking, ints bool, cmd string) (Reply, error) {
	cl := &call{cmd: cmd, asking: asking, ints: ints, done: make(chan struct{})}
	m.Lock()
	if m.err != nil {
		err := m.err
		m.Unlock()
		return Reply{}, err
	}
	m.queue = append(m.queue, cl)
	handOff := !m.writing
	m.writing = true
	m.Unlock()
	if handOff {
		wakeWriter(m)
	}
	err := await(ctx, m, cl)
	select {
	case <-cl.done:
	default:
		// Given up on (the caller's context ended): the reader may still
		// write the reply into cl, so it is not read here.
		return Reply{}, err
	}
	if ints && err == nil {
		return Reply{Kind: '*', ints: cl.vals}, nil
	}
	rep, _ := cl.rep.(Reply)
	return rep, err
}

// sharedInts runs cmd, whose reply is an array of integers, on p's
// pipelined connection: onShared, muxDo and await in one, without a
// Reply, for the command of every decision. A caller that finds the
// connection idle (no write in flight, no reply outstanding) writes cmd
// itself; otherwise cmd joins the queue of the writer goroutine, which
// gathers concurrent commands into shared writes. A missing or broken connection, and the one
// retry on a new connection that onShared's callers make, go to
// sharedIntsDial. Interpreted, every temporary here is a slot allocated
// on every call, hence the terse body.
func sharedInts(ctx context.Context, p *pool, cmd string) ([]int64, error) {
	p.muxMu.Lock()
	m := p.mux
	p.muxMu.Unlock()
	if m == nil {
		return sharedIntsDial(ctx, p, cmd, false)
	}
	cl := &call{cmd: cmd, ints: true, done: make(chan struct{})}
	m.Lock()
	// own: the connection is idle, cmd goes out at once from here;
	// handOff: replies are outstanding, so more commands are likely to
	// come, and the writer goroutine gathers them into one write.
	ok := m.err == nil
	served := m.replies > 0
	handOff := !m.writing
	own := handOff && len(m.pending) == 0
	if ok {
		m.writing = true
		if own {
			m.pending = append(m.pending, cl)
		} else {
			m.queue = append(m.queue, cl)
		}
	}
	m.Unlock()
	if !ok {
		return sharedIntsDial(ctx, p, cmd, false)
	}
	if own {
		writeOwn(m, cmd)
	} else if handOff {
		wakeWriter(m)
	}
	// await, inlined.
	select {
	case <-cl.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if cl.err != nil {
		return sharedIntsFailed(ctx, p, m, cl, served)
	}
	return cl.vals, nil
}

// sharedIntsFailed finishes sharedInts of cl on m, whose reply was an
// error: a connection the server closed before cl's command arrived (it
// had served, so this may be an idle close) is dialled again and the
// command retried once; any other error is cl's.
func sharedIntsFailed(ctx context.Context, p *pool, m *muxConn, cl *call, served bool) ([]int64, error) {
	if served && idleClosed(cl.err) && muxBroken(m) {
		return sharedIntsDial(ctx, p, cl.cmd, true)
	}
	return cl.vals, cl.err
}

// writeOwn writes cmd, a caller's that found the connection idle, then
// passes the write side on: to the writer goroutine if commands were
// queued meanwhile, else to the next caller. A write that fails breaks
// the connection; one that blocks is the watchdog's. It is apart from
// sharedInts, whose callers under load queue their commands instead,
// because, interpreted, a call allocates a slot for every local of the
// function called, branches taken or not.
func writeOwn(m *muxConn, cmd string) {
	b := append(m.c.wbuf[:0], cmd...)
	if _, err := m.c.nc.Write(b); err != nil {
		m.fail(err)
		return
	}
	m.Lock()
	m.c.wbuf = b
	handOff := len(m.queue) > 0 // now: hand the queue to the writer
	m.writing = handOff
	m.Unlock()
	if handOff {
		wakeWriter(m)
	}
}

// wakeWriter hands the write side, and the queue, to the writer
// goroutine. A full channel already wakes it.
func wakeWriter(m *muxConn) {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// sharedIntsDial is sharedInts through onShared. onShared dials a new
// connection when there is none or the last one broke, and retries once
// on a new connection as its callers do (fresh is set for that retry).
func sharedIntsDial(ctx context.Context, p *pool, cmd string, fresh bool) ([]int64, error) {
	rep, err, retry := onShared(ctx, p, false, true, cmd, fresh)
	if retry {
		rep, err, _ = onShared(ctx, p, false, true, cmd, true)
	}
	return rep.ints, err
}

// await waits for the reply of cl, queued on m, or until ctx is done.
// The watchdog bounds the wait by the write and read timeouts.
func await(ctx context.Context, m *muxConn, cl *call) error {
	select {
	case <-cl.done:
		return cl.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeLoop writes the queued commands in batches until the queue is
// empty, then gives the write side up. A caller hands it the write side
// (wake).
func (m *muxConn) writeLoop() {
	// Every variable is declared once, out of the loop: interpreted, a
	// declaration allocates each time it runs.
	var batch []*call
	var b []byte
	var err error
	for range m.wake {
		for {
			// Let the callers that the last replies woke queue their next
			// command first, so that it joins this write instead of
			// costing one of its own (about 10% more decisions/s at 50
			// callers).
			runtime.Gosched()
			m.Lock()
			if m.err != nil {
				m.Unlock()
				return
			}
			if len(m.queue) == 0 {
				m.writing = false
				m.Unlock()
				break
			}
			batch = append(batch[:0], m.queue...)
			m.queue = m.queue[:0]
			m.pending = append(m.pending, batch...)
			b = m.c.wbuf[:0]
			m.Unlock()
			for i := range batch {
				if batch[i].asking {
					b = append(b, askingCmd...)
				}
				b = append(b, batch[i].cmd...)
				batch[i] = nil
			}
			if _, err = m.c.nc.Write(b); err != nil {
				m.fail(err)
				return
			}
			m.c.wbuf = b
		}
	}
}

// watchTicks is how many times per timeout the watchdog looks.
const watchTicks = 8

// errIdleClosed breaks a pipelined connection that stayed idle for
// Options.IdleTimeout. No command was on it, so a command that finds it
// broken dials again (see onShared).
var errIdleClosed = errors.New("resp: idle connection closed")

// watch breaks the connection when its oldest command has waited past
// the write and read timeouts: it looks watchTicks times per timeout and
// fails the connection when it finds the same oldest command watchTicks
// times after the first, so a command waits at most one look longer
// than its timeout. A write that blocks holds its commands, the oldest
// ones, in pending: the watchdog bounds writes too. With
// Options.IdleTimeout, it also closes the connection once no command was
// queued, written or answered for that long (read from what the path of
// every command writes anyway: nothing more per command). It ends with
// the connection.
func (m *muxConn) watch() {
	every := (m.opts.WriteTimeout + m.opts.ReadTimeout) / watchTicks
	if every <= 0 {
		every = 1
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var seen, oldest *call
	looks := 0
	var idle time.Duration
	replies := int64(-1)
	for range t.C {
		m.Lock()
		if m.err != nil {
			m.Unlock()
			return
		}
		oldest = nil
		if len(m.pending) > 0 {
			oldest = m.pending[0]
		} else if len(m.queue) > 0 {
			oldest = m.queue[0]
		}
		if m.opts.IdleTimeout > 0 {
			if oldest != nil || m.writing || m.replies != replies {
				idle, replies = 0, m.replies
			} else if idle += every; idle >= m.opts.IdleTimeout {
				// Under m's lock, with no command on it: a command that comes
				// next finds the connection broken and dials again.
				m.err = errIdleClosed
				m.Unlock()
				m.c.close()
				wakeWriter(m) // the writer wakes, sees err and ends
				return
			}
		}
		m.Unlock()
		if oldest == nil || oldest != seen {
			seen, looks = oldest, 0
			continue
		}
		if looks++; looks >= watchTicks {
			m.fail(timeoutError{})
			return
		}
	}
}

// readLoop reads replies as they come (without a deadline: the watchdog
// times them out) and completes the oldest pending call with each. A
// closed connection ends it at once, so a restarted server is noticed
// before the next command. Its work per reply is inline: interpreted, the
// loop's locals are allocated once, a call's on every call.
func (m *muxConn) readLoop() {
	// Every variable is declared once, out of the loop: interpreted, a
	// declaration allocates each time it runs.
	var asked *call // the call whose ASKING reply was read
	var cl *call
	var rep Reply
	var vals []int64
	var err, rerr error
	var line, buf []byte
	var isReply, neg bool
	var n, i, j, k int
	var v int64
	for {
		// Wait for a reply to begin, then let the oldest pending call say
		// how to read it: a reply comes only after its command was
		// written, so it is pending by then, and only the reader removes
		// it. A reply with none pending breaks the connection.
		if _, err = m.c.br.Peek(1); err != nil {
			m.fail(err)
			return
		}
		m.Lock()
		cl = nil
		if len(m.pending) > 0 {
			cl = m.pending[0]
		}
		m.Unlock()
		err = nil
		if cl != nil && cl.ints && (!cl.asking || asked == cl) {
			// readInts and bufferedInts, inlined: interpreted, the slots of
			// a loop are allocated once, a call's on every call
			// (FuzzPipelinedInts keeps the two in step).
			line, rerr = m.c.br.ReadSlice('\n')
			vals = nil
			if rerr == nil && len(line) == 4 && line[0] == '*' && line[1] >= '1' && line[1] <= '9' && line[2] == '\r' {
				n = int(line[1] - '0')
				if i = m.c.br.Buffered(); i > n*maxIntLine {
					i = n * maxIntLine
				}
				buf, _ = m.c.br.Peek(i)
				// The n lines ":[-]d...d\r\n" parsed by hand: interpreted, a
				// loop on the bytes costs no allocation, where a strings.SplitN
				// and a strconv.ParseInt a line cost some 30 a reply. A line
				// of another shape, or of more than 18 digits (which could
				// overflow), goes to readIntsRest, as do lines not all
				// buffered. One assignment a statement: interpreted, a
				// parallel one allocates.
				vals = make([]int64, n)
				j = 0
				for i = 0; i < n; i++ {
					if j+3 >= len(buf) || buf[j] != ':' {
						vals = nil
						break
					}
					j++
					if neg = buf[j] == '-'; neg {
						j++
					}
					k = j
					v = 0
					for ; j < len(buf) && buf[j] >= '0' && buf[j] <= '9'; j++ {
						v = v*10 + digitValue[buf[j]]
					}
					if j == k || j-k > 18 || j+1 >= len(buf) || buf[j] != '\r' || buf[j+1] != '\n' {
						vals = nil
						break
					}
					if neg {
						v = -v
					}
					vals[i] = v
					j += 2
				}
				if vals != nil {
					m.c.br.Discard(j)
				} else {
					vals, err = readIntsRest(m.c.br, int64(n))
				}
			} else {
				vals, err = readIntsHead(m.c.br, line, rerr)
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
		m.Lock()
		if len(m.pending) == 0 || m.pending[0] != cl {
			// The connection failed meanwhile (a timeout), and so did cl.
			m.Unlock()
			return
		}
		if cl.asking && asked != cl {
			// That was ASKING's reply; the command's own follows.
			m.Unlock()
			asked, cl.askErr = cl, err
			continue
		}
		m.pending[0] = nil
		m.pending = m.pending[1:]
		m.replies++
		m.Unlock()
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

// digitValue is the value of each decimal digit, by its byte: the
// pipelined reader's parse indexes it where a conversion would allocate
// interpreted (a conversion is one reflect.Value.Convert).
var digitValue = [...]int64{'0': 0, '1': 1, '2': 2, '3': 3, '4': 4, '5': 5, '6': 6, '7': 7, '8': 8, '9': 9}

// fail breaks the connection: it is closed and every queued or pending
// call fails with err.
func (m *muxConn) fail(err error) {
	m.Lock()
	if m.err != nil {
		m.Unlock()
		return
	}
	m.err = err
	calls := make([]*call, 0, len(m.queue)+len(m.pending))
	calls = append(calls, m.queue...)
	calls = append(calls, m.pending...)
	m.queue = m.queue[:0]
	m.pending = m.pending[:0]
	m.Unlock()
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
	m.Lock()
	n := m.replies
	m.Unlock()
	return n > 0
}

// muxBroken reports whether the connection failed.
func muxBroken(m *muxConn) bool {
	m.Lock()
	broken := m.err != nil
	m.Unlock()
	return broken
}
