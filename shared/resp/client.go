package resp

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// maxRedirects bounds how many MOVED/ASK replies one command follows.
const maxRedirects = 5

// Client talks to one Redis server or one Redis Cluster. It is safe for
// concurrent use. New never dials: connections open on first use.
type Client struct {
	opts Options

	// single is the pool of a standalone server, nil in a cluster; piped
	// is single with AutoPipeline, else nil: the pool whose pipelined
	// connection the commands of every decision share, found in one
	// frame slot interpreted.
	single *pool
	piped  *pool

	mu     sync.RWMutex
	pools  map[string]*pool
	closed bool

	// Cluster state; slots is nil until the first CLUSTER SLOTS.
	slots      []*pool
	refreshMu  sync.Mutex
	refreshing int32
}

// New validates opts and returns a client. It does not connect.
func New(opts Options) (*Client, error) {
	o := opts
	o.Addrs = append([]string(nil), opts.Addrs...)
	if err := o.normalize(); err != nil {
		return nil, err
	}
	c := &Client{opts: o, pools: make(map[string]*pool)}
	if !o.Cluster {
		c.single = newPool(o.Addrs[0], &c.opts)
		c.pools[o.Addrs[0]] = c.single
		if o.AutoPipeline {
			c.piped = c.single
		}
	}
	return c, nil
}

// Close closes the idle connections and makes later commands fail.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	pools := c.pools
	c.pools = make(map[string]*pool)
	c.mu.Unlock()
	for _, p := range pools {
		p.close()
	}
	return nil
}

// Do runs one command and returns its reply; an error reply is returned as
// *Error. In a cluster, Do goes to any node: use DoKey for keyed commands.
func (c *Client) Do(ctx context.Context, args ...string) (Reply, error) {
	return exec(ctx, c, "", false, false, encodeCommand(args))
}

// DoKey runs a command on the server that holds key, following cluster
// redirections.
func (c *Client) DoKey(ctx context.Context, key string, args ...string) (Reply, error) {
	return exec(ctx, c, key, true, false, encodeCommand(args))
}

// EvalSha runs the script cached under sha and returns its integer array.
func (c *Client) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	key, hasKey := firstKey(keys)
	return evalInts(ctx, c, key, hasKey, encodeEval("EVALSHA", sha, keys, args))
}

// Eval runs script, which the server caches for later EvalSha calls.
func (c *Client) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	key, hasKey := firstKey(keys)
	return evalInts(ctx, c, key, hasKey, encodeEval("EVAL", script, keys, args))
}

// PrepareEvalSha encodes an EVALSHA of the script cached under sha, on
// one key and with args, in the two parts that enclose the key, for
// EvalShaPrepared: a caller that runs one script with the same arguments
// on many keys (the limiter, per rule) encodes them once.
func (c *Client) PrepareEvalSha(sha string, args []string) (head, tail string) {
	return encodePrepared(sha, args)
}

// EvalShaPrepared runs the EVALSHA that head and tail, from
// PrepareEvalSha, enclose, on key, and returns its integer array.
func (c *Client) EvalShaPrepared(ctx context.Context, head, key, tail string) ([]int64, error) {
	return EvalPrepared(ctx, c, head, key, tail)
}

// EvalPrepared is c.EvalShaPrepared as a function, for the limiter's
// call on every request: interpreted, a caller that names it calls it
// directly, some 20 allocations fewer than through a method value or an
// interface (redisstore.TakeKey).
func EvalPrepared(ctx context.Context, c *Client, head, key, tail string) ([]int64, error) {
	// Three concatenations, each allocating its string interpreted: the
	// CRLFs are in the tables and in tail (see encodePrepared). A key of
	// bulkMax bytes or more, never the limiter's, costs a call
	// (bulkLine): inline, its slots would cost every call 4 allocations.
	line := ""
	if len(key) < bulkMax {
		line = bulkLines[len(key)]
	} else {
		line = bulkLine(key)
	}
	cmd := head + line + key + tail
	if c.piped != nil {
		// evalInts, inlined: one call less on every decision.
		return sharedInts(ctx, c.piped, cmd)
	}
	return evalInts(ctx, c, key, true, cmd)
}

// PrepareEvalSha2 encodes an EVALSHA of sha on two keys, with args and
// then one argument more, in the parts around the keys: the call of a
// request that names a second key and an argument of its own (an
// in-flight slot), made with EvalShaPrepared2.
func (c *Client) PrepareEvalSha2(sha string, args []string) (head, mid string) {
	return encodePrepared2(sha, args)
}

// EvalShaPrepared2 runs the EVALSHA that head and mid, from
// PrepareEvalSha2, enclose, on key and key2 (in key's cluster slot), with
// last as its last argument, and returns its integer array.
func (c *Client) EvalShaPrepared2(ctx context.Context, head, key, key2, mid, last string) ([]int64, error) {
	cmd := head + bulkLine(key) + key + "\r\n" + bulkLine(key2) + key2 + "\r\n" + mid + bulkLine(last) + last + "\r\n"
	if c.single != nil && c.opts.AutoPipeline {
		return sharedInts(ctx, c.single, cmd)
	}
	return evalInts(ctx, c, key, true, cmd)
}

// bulkLine returns the line that begins a bulk string of s: "$n\r\n".
func bulkLine(s string) string {
	if len(s) < len(bulkLines) {
		return bulkLines[len(s)]
	}
	return "$" + strconv.Itoa(len(s)) + "\r\n"
}

// firstKey returns the first of keys, which a cluster routes by.
func firstKey(keys []string) (string, bool) {
	if len(keys) == 0 {
		return "", false
	}
	return keys[0], true
}

// ScriptLoad caches script on the server (on every master of a cluster)
// and returns its SHA1.
func (c *Client) ScriptLoad(ctx context.Context, script string) (string, error) {
	cmd := encodeCommand([]string{"SCRIPT", "LOAD", script})
	if !c.opts.Cluster {
		rep, err := exec(ctx, c, "", false, false, cmd)
		return rep.Str, err
	}
	if err := c.ensureSlots(ctx); err != nil {
		return "", err
	}
	sha := ""
	for _, p := range c.masters() {
		rep, err := on(ctx, c, p, false, false, cmd)
		if err != nil {
			return "", err
		}
		sha = rep.Str
	}
	return sha, nil
}

// The functions below are the path of every command: functions rather
// than methods, and few (see the package documentation).

// evalInts runs cmd, an encoded EVAL or EVALSHA whose first key is key
// (none when hasKey is false), and returns the script's integers. A
// standalone server's pipelined connection, the plugin's case, takes the
// short way (sharedInts).
func evalInts(ctx context.Context, c *Client, key string, hasKey bool, cmd string) ([]int64, error) {
	if c.single != nil && c.opts.AutoPipeline {
		return sharedInts(ctx, c.single, cmd)
	}
	rep, err := exec(ctx, c, key, hasKey, true, cmd)
	if err != nil {
		return nil, err
	}
	if rep.ints != nil {
		return rep.ints, nil
	}
	return rep.Ints()
}

// exec sends cmd, an encoded command, to the server for key (any server
// when hasKey is false) and follows cluster redirections. ints selects
// the reader of integer arrays (see readInts).
func exec(ctx context.Context, c *Client, key string, hasKey, ints bool, cmd string) (Reply, error) {
	p := c.single
	if p == nil {
		var err error
		if p, err = c.route(ctx, key, hasKey); err != nil {
			return Reply{}, err
		}
	}
	// on, inlined: one call less on every command.
	var rep Reply
	var err error
	var retry bool
	if c.opts.AutoPipeline {
		if rep, err, retry = onShared(ctx, p, false, ints, cmd, false); retry {
			rep, err, _ = onShared(ctx, p, false, ints, cmd, true)
		}
	} else if rep, err, retry = onConn(ctx, p, false, ints, cmd, false); retry {
		rep, err, _ = onConn(ctx, p, false, ints, cmd, true)
	}
	if err == nil || !c.opts.Cluster {
		return rep, err
	}
	return redirect(ctx, c, ints, cmd, rep, err)
}

// redirect follows the MOVED and ASK replies of a cluster, given the
// first attempt's reply and error.
func redirect(ctx context.Context, c *Client, ints bool, cmd string, rep Reply, err error) (Reply, error) {
	for i := 0; i < maxRedirects; i++ {
		e, ok := err.(*Error)
		if !ok {
			c.refreshLater()
			return rep, err
		}
		moved, slot, addr := redirection(e.Msg)
		if addr == "" {
			return rep, err
		}
		p, perr := c.pool(addr)
		if perr != nil {
			return Reply{}, perr
		}
		if moved {
			c.setSlot(slot, p)
			c.refreshLater()
		}
		if rep, err = on(ctx, c, p, !moved, ints, cmd); err == nil {
			return rep, nil
		}
	}
	return rep, err
}

// on runs cmd on one server. A command that failed on a reused
// connection with a reset or EOF (the server closed it while idle, or
// restarted) is retried once on a new connection; a timeout never is.
func on(ctx context.Context, c *Client, p *pool, asking, ints bool, cmd string) (Reply, error) {
	var rep Reply
	var err error
	var retry bool
	if c.opts.AutoPipeline {
		rep, err, retry = onShared(ctx, p, asking, ints, cmd, false)
		if retry {
			rep, err, _ = onShared(ctx, p, asking, ints, cmd, true)
		}
		return rep, err
	}
	rep, err, retry = onConn(ctx, p, asking, ints, cmd, false)
	if retry {
		rep, err, _ = onConn(ctx, p, asking, ints, cmd, true)
	}
	return rep, err
}

func onShared(ctx context.Context, p *pool, asking, ints bool, cmd string, fresh bool) (Reply, error, bool) {
	m, err := shared(ctx, p)
	if err != nil {
		return Reply{}, err, false
	}
	wasServed := served(m)
	rep, err := muxDo(ctx, m, asking, ints, cmd)
	// A connection closed for idleness had no command on it: this one was
	// never sent.
	return rep, err, err != nil && !fresh && muxBroken(m) && (err == errIdleClosed || wasServed && idleClosed(err))
}

func onConn(ctx context.Context, p *pool, asking, ints bool, cmd string, fresh bool) (Reply, error, bool) {
	cn, err := get(ctx, p, fresh)
	if err != nil {
		return Reply{}, err, false
	}
	now := time.Now()
	writeBy, readBy := now.Add(p.opts.WriteTimeout), now.Add(p.opts.ReadTimeout)
	if d, ok := ctx.Deadline(); ok {
		if d.Before(writeBy) {
			writeBy = d
		}
		if d.Before(readBy) {
			readBy = d
		}
	}
	out := cmd
	if asking {
		out = askingCmd + cmd
	}
	var rep Reply
	var askErr error
	if err = send(cn, writeBy, []byte(out)); err == nil && asking {
		// An error reply to ASKING still leaves the command's reply to
		// read: read both, or the connection is one reply behind.
		if _, askErr = receive(cn, readBy, false); cn.broken {
			err = askErr
		}
	}
	if err == nil {
		rep, err = receive(cn, readBy, ints)
		err = afterAsking(askErr, err)
	}
	retry := err != nil && cn.broken && cn.reused && !fresh && idleClosed(err)
	put(p, cn)
	return rep, err, retry
}

// afterAsking returns the error of a command sent after ASKING, given
// ASKING's error reply (nil if it succeeded) and the command's own error.
// A refused ASKING (NOPERM for an ACL user without it) means the command
// ran unflagged and was most likely redirected back; the refusal says
// more than that redirection, so it wins over an error reply.
func afterAsking(askErr, err error) error {
	if askErr != nil {
		if _, ok := err.(*Error); ok {
			return askErr
		}
	}
	return err
}

// idleClosed reports whether err looks like a connection the server closed
// before our command arrived, rather than a slow or unreachable server.
func idleClosed(err error) bool {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// pool returns the pool of addr, creating it.
func (c *Client) pool(addr string) (*pool, error) {
	c.mu.RLock()
	p, ok := c.pools[addr]
	closed := c.closed
	c.mu.RUnlock()
	if ok {
		return p, nil
	}
	if closed {
		return nil, errClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if p, ok = c.pools[addr]; !ok {
		p = newPool(addr, &c.opts)
		c.pools[addr] = p
	}
	return p, nil
}

// route returns the pool of the server for key.
func (c *Client) route(ctx context.Context, key string, hasKey bool) (*pool, error) {
	if !c.opts.Cluster {
		return c.pool(c.opts.Addrs[0])
	}
	if err := c.ensureSlots(ctx); err != nil {
		return nil, err
	}
	slot := 0
	if hasKey {
		slot = Slot(key)
	}
	c.mu.RLock()
	p := c.slots[slot]
	c.mu.RUnlock()
	if p == nil {
		return nil, errors.New("resp: cluster slot " + strconv.Itoa(slot) + " has no node")
	}
	return p, nil
}
