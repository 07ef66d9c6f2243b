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
	return &Client{opts: o, pools: make(map[string]*pool)}, nil
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
	return c.exec(ctx, "", false, false, args)
}

// DoKey runs a command on the server that holds key, following cluster
// redirections.
func (c *Client) DoKey(ctx context.Context, key string, args ...string) (Reply, error) {
	return c.exec(ctx, key, true, false, args)
}

// EvalSha runs the script cached under sha and returns its integer array.
func (c *Client) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	return c.eval(ctx, "EVALSHA", sha, keys, args)
}

// Eval runs script, which the server caches for later EvalSha calls.
func (c *Client) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	return c.eval(ctx, "EVAL", script, keys, args)
}

// ScriptLoad caches script on the server (on every master of a cluster)
// and returns its SHA1.
func (c *Client) ScriptLoad(ctx context.Context, script string) (string, error) {
	if !c.opts.Cluster {
		rep, err := c.Do(ctx, "SCRIPT", "LOAD", script)
		return rep.Str, err
	}
	if err := c.ensureSlots(ctx); err != nil {
		return "", err
	}
	sha := ""
	for _, p := range c.masters() {
		rep, err := c.on(ctx, p, false, false, []string{"SCRIPT", "LOAD", script})
		if err != nil {
			return "", err
		}
		sha = rep.Str
	}
	return sha, nil
}

func (c *Client) eval(ctx context.Context, cmd, body string, keys, args []string) ([]int64, error) {
	full := make([]string, 0, 3+len(keys)+len(args))
	full = append(full, cmd, body, strconv.Itoa(len(keys)))
	full = append(full, keys...)
	full = append(full, args...)
	key, hasKey := "", len(keys) > 0
	if hasKey {
		key = keys[0]
	}
	rep, err := c.exec(ctx, key, hasKey, true, full)
	if err != nil {
		return nil, err
	}
	return rep.Ints()
}

// exec runs args on the server for key (any server when hasKey is false)
// and follows cluster redirections. ints selects the reader of integer
// arrays (see readInts).
func (c *Client) exec(ctx context.Context, key string, hasKey, ints bool, args []string) (Reply, error) {
	p, err := c.route(ctx, key, hasKey)
	if err != nil {
		return Reply{}, err
	}
	asking := false
	for i := 0; ; i++ {
		rep, err := c.on(ctx, p, asking, ints, args)
		if err == nil || !c.opts.Cluster || i == maxRedirects {
			return rep, err
		}
		e, ok := err.(*Error)
		if !ok {
			c.refreshLater()
			return rep, err
		}
		moved, slot, addr := redirection(e.Msg)
		if addr == "" {
			return rep, err
		}
		if p, err = c.pool(addr); err != nil {
			return Reply{}, err
		}
		asking = !moved
		if moved {
			c.setSlot(slot, p)
			c.refreshLater()
		}
	}
}

// on runs args on one server. A command that failed on a reused
// connection with a reset or EOF (the server closed it while idle, or
// restarted) is retried once on a new connection; a timeout never is.
func (c *Client) on(ctx context.Context, p *pool, asking, ints bool, args []string) (Reply, error) {
	rep, err, retry := c.onConn(ctx, p, asking, ints, args, false)
	if retry {
		rep, err, _ = c.onConn(ctx, p, asking, ints, args, true)
	}
	return rep, err
}

func (c *Client) onConn(ctx context.Context, p *pool, asking, ints bool, args []string, fresh bool) (Reply, error, bool) {
	if c.opts.AutoPipeline {
		m, err := p.shared(ctx)
		if err != nil {
			return Reply{}, err, false
		}
		served := m.served()
		rep, err := m.do(ctx, asking, ints, args)
		return rep, err, err != nil && served && !fresh && m.broken() && idleClosed(err)
	}
	cn, err := p.get(ctx, fresh)
	if err != nil {
		return Reply{}, err, false
	}
	now := time.Now()
	writeBy, readBy := now.Add(c.opts.WriteTimeout), now.Add(c.opts.ReadTimeout)
	if d, ok := ctx.Deadline(); ok {
		if d.Before(writeBy) {
			writeBy = d
		}
		if d.Before(readBy) {
			readBy = d
		}
	}
	if asking {
		cn.writeArray(1)
		cn.writeBulk("ASKING")
	}
	cn.writeArray(len(args))
	for _, a := range args {
		cn.writeBulk(a)
	}
	var rep Reply
	var askErr error
	if err = cn.flush(writeBy); err == nil && asking {
		// An error reply to ASKING still leaves the command's reply to
		// read: read both, or the connection is one reply behind.
		if _, askErr = cn.read(readBy, false); cn.broken {
			err = askErr
		}
	}
	if err == nil {
		rep, err = cn.read(readBy, ints)
		err = afterAsking(askErr, err)
	}
	retry := err != nil && cn.broken && cn.reused && !fresh && idleClosed(err)
	p.put(cn)
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
