package resp

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
)

// clusterSlotsCmd is CLUSTER SLOTS, encoded. It is a constant rather than
// a variable set by encodeCommand, which would run before the header
// tables it needs (see the package documentation).
const clusterSlotsCmd = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n"

// ensureSlots loads the slot map if it was never loaded.
func (c *Client) ensureSlots(ctx context.Context) error {
	c.mu.RLock()
	loaded := c.slots != nil
	c.mu.RUnlock()
	if loaded {
		return nil
	}
	return c.refresh(ctx, false)
}

// refreshLater reloads the slot map in the background, once at a time.
func (c *Client) refreshLater() {
	if !atomic.CompareAndSwapInt32(&c.refreshing, 0, 1) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.DialTimeout+c.opts.ReadTimeout)
		c.refresh(ctx, true)
		cancel()
		atomic.StoreInt32(&c.refreshing, 0)
	}()
}

// refresh asks the known nodes, then the seeds, for CLUSTER SLOTS until one
// answers, and installs the map. Without force it returns at once if
// another caller loaded the map meanwhile.
func (c *Client) refresh(ctx context.Context, force bool) error {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	c.mu.RLock()
	loaded := c.slots != nil
	c.mu.RUnlock()
	if loaded && !force {
		return nil
	}
	var lastErr error
	for _, addr := range c.candidates() {
		p, err := c.pool(addr)
		if err != nil {
			return err
		}
		rep, err := on(ctx, c, p, false, false, clusterSlotsCmd)
		if err != nil {
			lastErr = err
			continue
		}
		slots, err := c.parseSlots(rep, addr)
		if err != nil {
			lastErr = err
			continue
		}
		c.mu.Lock()
		c.slots = slots
		c.mu.Unlock()
		return nil
	}
	if lastErr == nil {
		lastErr = errors.New("no node answered")
	}
	return errors.New("resp: cluster slots: " + lastErr.Error())
}

// candidates lists the nodes of the current map, then the seeds.
func (c *Client) candidates() []string {
	var out []string
	seen := make(map[string]bool)
	for _, p := range c.masters() {
		if !seen[p.addr] {
			seen[p.addr] = true
			out = append(out, p.addr)
		}
	}
	for _, a := range c.opts.Addrs {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// masters returns the distinct pools of the slot map.
func (c *Client) masters() []*pool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*pool
	var last *pool
	for _, p := range c.slots {
		if p == nil || p == last {
			continue
		}
		last = p
		dup := false
		for _, q := range out {
			if q == p {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, p)
		}
	}
	return out
}

// parseSlots turns a CLUSTER SLOTS reply, asked of from, into a slot map.
// Every entry is [start, end, [host, port, ...], replicas...]; an empty
// host means the node that answered.
func (c *Client) parseSlots(rep Reply, from string) ([]*pool, error) {
	bad := errors.New("malformed CLUSTER SLOTS reply")
	if rep.Kind != '*' {
		return nil, bad
	}
	fromHost, _, _ := net.SplitHostPort(from)
	slots := make([]*pool, Slots)
	for _, e := range rep.Elems {
		if e.Kind != '*' || len(e.Elems) < 3 {
			return nil, bad
		}
		start, end, master := e.Elems[0], e.Elems[1], e.Elems[2]
		if start.Kind != ':' || end.Kind != ':' || start.Int < 0 || end.Int >= Slots || start.Int > end.Int {
			return nil, bad
		}
		if master.Kind != '*' || len(master.Elems) < 2 || master.Elems[1].Kind != ':' {
			return nil, bad
		}
		host := master.Elems[0].Str
		if host == "" || host == "?" {
			host = fromHost
		}
		p, err := c.pool(net.JoinHostPort(host, strconv.FormatInt(master.Elems[1].Int, 10)))
		if err != nil {
			return nil, err
		}
		for s := start.Int; s <= end.Int; s++ {
			slots[s] = p
		}
	}
	return slots, nil
}

// setSlot points one slot at p after a MOVED.
func (c *Client) setSlot(slot int, p *pool) {
	c.mu.Lock()
	if c.slots != nil && slot >= 0 && slot < Slots {
		c.slots[slot] = p
	}
	c.mu.Unlock()
}

// redirection parses "MOVED <slot> <host:port>" or "ASK <slot> <host:port>";
// addr is empty for any other error.
func redirection(msg string) (moved bool, slot int, addr string) {
	var rest string
	switch {
	case strings.HasPrefix(msg, "MOVED "):
		moved, rest = true, msg[len("MOVED "):]
	case strings.HasPrefix(msg, "ASK "):
		rest = msg[len("ASK "):]
	default:
		return false, 0, ""
	}
	sp := strings.IndexByte(rest, ' ')
	if sp < 0 {
		return false, 0, ""
	}
	n, err := strconv.Atoi(rest[:sp])
	if err != nil {
		return false, 0, ""
	}
	addr = rest[sp+1:]
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return false, 0, ""
	}
	return moved, n, addr
}
