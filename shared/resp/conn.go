package resp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"time"
)

// conn is one connection to one server. It is used by one goroutine at a
// time; broken is set by the first I/O or protocol error, after which the
// pool closes it instead of reusing it.
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	wbuf   []byte // commands to send together: ASKING and its command, a pipelined batch
	broken bool
	// reused is set once the connection has served a command, so that an
	// error on it may be a server-side idle close rather than an outage.
	reused bool
}

// dial connects to addr and runs the handshake (TLS, AUTH, SELECT) within
// the dial timeout.
func dial(ctx context.Context, addr string, o *Options) (*conn, error) {
	deadline := time.Now().Add(o.DialTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	d := net.Dialer{Deadline: deadline, KeepAlive: 5 * time.Minute}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if o.TLS != nil {
		cfg := o.TLS.Clone()
		if cfg.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(nc, cfg)
		tc.SetDeadline(deadline)
		if err := tc.Handshake(); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	c := &conn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10), wbuf: make([]byte, 0, 512)}
	if err := c.handshake(deadline, o); err != nil {
		nc.Close()
		return nil, err
	}
	// The handshake's deadline must not outlive it: a pooled command sets
	// its own, and a pipelined connection reads and writes without one
	// (its watchdog times commands out), so a stale one would break it
	// the dial timeout after it was dialled, failing the commands in
	// flight.
	if err := nc.SetDeadline(time.Time{}); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func (c *conn) handshake(deadline time.Time, o *Options) error {
	if o.Password != "" || o.Username != "" {
		var err error
		if o.Username != "" {
			_, err = c.do(deadline, deadline, "AUTH", o.Username, o.Password)
		} else {
			_, err = c.do(deadline, deadline, "AUTH", o.Password)
		}
		if err != nil {
			return errors.New("resp: auth: " + err.Error())
		}
	}
	if o.DB != 0 {
		if _, err := c.do(deadline, deadline, "SELECT", strconv.Itoa(o.DB)); err != nil {
			return errors.New("resp: select: " + err.Error())
		}
	}
	return nil
}

// do sends one command and reads its reply. An error reply is returned as
// *Error and leaves the connection usable.
func (c *conn) do(writeBy, readBy time.Time, args ...string) (Reply, error) {
	c.wbuf = append(c.wbuf[:0], encodeCommand(args)...)
	if err := send(c, writeBy, c.wbuf); err != nil {
		return Reply{}, err
	}
	return receive(c, readBy, false)
}

// send writes b, one or more encoded commands, by the deadline.
func send(c *conn, by time.Time, b []byte) error {
	if err := c.nc.SetWriteDeadline(by); err != nil {
		c.broken = true
		return err
	}
	if _, err := c.nc.Write(b); err != nil {
		c.broken = true
		return err
	}
	return nil
}

// receive reads one reply by the deadline; ints selects readInts.
func receive(c *conn, by time.Time, ints bool) (Reply, error) {
	if err := c.nc.SetReadDeadline(by); err != nil {
		c.broken = true
		return Reply{}, err
	}
	if ints {
		vals, err := readInts(c.br)
		if err == nil {
			return Reply{Kind: '*', ints: vals}, nil
		}
		if e, ok := err.(*Error); ok {
			return Reply{Kind: '-', Str: e.Msg}, e
		}
		c.broken = true
		return Reply{}, err
	}
	rep, err := readReply(c.br)
	if err != nil {
		c.broken = true
		return Reply{}, err
	}
	if rep.Kind == '-' {
		return rep, &Error{Msg: rep.Str}
	}
	return rep, nil
}

func (c *conn) close() { c.nc.Close() }
