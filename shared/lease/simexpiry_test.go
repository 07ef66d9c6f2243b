package lease

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// simExpiry makes Redis expire the simulation's keys on the simulated
// clock instead of its own, so that a simulation gives the same counts
// however slowly the machine runs it. Each script runs inside a wrapper
// that, in the same atomic call, reads the TTL the script left on each of
// its keys and removes it; the key's deadline is then kept here, on the
// server's simulated time, and the key deleted once a call or a read comes
// after it, as Redis deletes an expired key when it is next touched.
type simExpiry struct {
	client *resp.Client

	mu       sync.Mutex
	wrapped  map[string]string // a script's SHA1 to its wrapper's
	deadline map[string]int64  // a key's expiry, server time in µs
	expired  int64             // keys deleted at their simulated expiry
	writes   int64             // calls and deletions that may have changed a key
}

// wrapper runs the script, then appends to its reply the TTL it left on
// each key in milliseconds (-1 none, -2 no key) and removes that TTL.
const wrapper = `local function script()
%s
end
local reply = script()
if type(reply) ~= 'table' or reply.err then return reply end
for _, key in ipairs(KEYS) do
  local ttl = redis.call('PTTL', key)
  if ttl >= 0 then redis.call('PERSIST', key) end
  reply[#reply + 1] = ttl
end
return reply
`

// errNoScript is EVALSHA's answer for a script whose text this side has
// not wrapped yet: the store then sends the text (Eval).
var errNoScript = errors.New("NOSCRIPT the simulation has not wrapped this script yet")

func newSimExpiry(c *resp.Client) *simExpiry {
	return &simExpiry{client: c, wrapped: map[string]string{}, deadline: map[string]int64{}}
}

// evalSha runs the wrapper of the script named sha at server time now
// (µs, from the call's first argument).
func (x *simExpiry) evalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	if err := x.expire(ctx, argTime(args)); err != nil {
		return nil, err
	}
	x.mu.Lock()
	w, ok := x.wrapped[sha]
	x.mu.Unlock()
	if !ok {
		return nil, errNoScript
	}
	res, err := x.client.EvalSha(ctx, w, keys, args)
	return x.settle(keys, argTime(args), res, err)
}

// eval sends the wrapper of script.
func (x *simExpiry) eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	if err := x.expire(ctx, argTime(args)); err != nil {
		return nil, err
	}
	w := fmt.Sprintf(wrapper, script)
	x.mu.Lock()
	x.wrapped[shaHex(script)] = shaHex(w)
	x.mu.Unlock()
	res, err := x.client.Eval(ctx, w, keys, args)
	return x.settle(keys, argTime(args), res, err)
}

// settle records the deadlines the wrapper's reply gives for keys, as of
// server time now, and returns the script's own reply.
func (x *simExpiry) settle(keys []string, now int64, res []int64, err error) ([]int64, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.writes++
	if err != nil {
		return nil, err
	}
	n := len(res) - len(keys)
	if n < 0 {
		return nil, fmt.Errorf("simulated expiry: %d integers in the reply for %d keys", len(res), len(keys))
	}
	for i, k := range keys {
		switch ttl := res[n+i]; {
		case ttl >= 0 && now > 0:
			x.deadline[k] = now + ttl*1000
		case ttl == -2:
			delete(x.deadline, k)
		}
	}
	return res[:n], nil
}

// expire deletes the keys whose deadline is before server time now (µs;
// 0: the server's own clock, which expires nothing here).
func (x *simExpiry) expire(ctx context.Context, now int64) error {
	if now == 0 {
		return nil
	}
	x.mu.Lock()
	var due []string
	for k, d := range x.deadline {
		if d < now {
			due = append(due, k)
			delete(x.deadline, k)
		}
	}
	x.expired += int64(len(due))
	x.mu.Unlock()
	for _, k := range due {
		if err := x.del(ctx, k); err != nil {
			return fmt.Errorf("simulated expiry: %w", err)
		}
	}
	return nil
}

// del deletes key, as Redis losing it.
func (x *simExpiry) del(ctx context.Context, key string) error {
	_, err := x.client.DoKey(ctx, key, "DEL", key)
	x.mu.Lock()
	delete(x.deadline, key)
	x.writes++
	x.mu.Unlock()
	if err != nil {
		return fmt.Errorf("DEL %s: %w", key, err)
	}
	return nil
}

// Writes returns how many calls and deletions may have changed a key so
// far: a key read when it was the same still holds what was read.
func (x *simExpiry) Writes() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.writes
}

// Expired returns how many keys expired on the simulated clock.
func (x *simExpiry) Expired() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.expired
}

// argTime is a script call's time in µs (its first argument; 0 for the
// server's clock).
func argTime(args []string) int64 {
	if len(args) == 0 {
		return 0
	}
	us, _ := strconv.ParseInt(args[0], 10, 64)
	return us
}

func shaHex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestSimExpiry: a simulation slower than real time keeps its counts (the
// real server's TTL passes, the simulated one does not), and a key expires
// once the simulated clock passes the end of its newest sub-window's count.
func TestSimExpiry(t *testing.T) {
	r := ratelimit.Rule{Window: 100 * time.Millisecond, SubWindow: 10 * time.Millisecond, Limit: 1000}
	f := newFleet(t, []string{redistest.Start(t).Addr()}, r, 1, false)
	if d := f.take(0, "k"); !d.Allowed {
		t.Fatalf("first request denied: %+v", d)
	}
	c := f.clock.now.UnixMicro() / r.SubWindow.Microseconds()
	// Longer than the TTL the script sets (at most W+T): the real server
	// would have deleted the key by now.
	time.Sleep(3 * r.Window)
	if _, counted, ok := f.bucket("k", c); !ok || counted != 1 {
		t.Fatalf("after %v of real time and none simulated: key there %v, count %d, want 1", 3*r.Window, ok, counted)
	}
	if n := f.runner.Expired(); n != 0 {
		t.Fatalf("%d keys expired with no simulated time passed", n)
	}
	f.clock.advance(f.clock.now.Add(r.Window + r.SubWindow + 2*time.Millisecond))
	if _, _, ok := f.bucket("k", c); ok {
		t.Fatalf("key still there %v after its request, past its window", r.Window+r.SubWindow+2*time.Millisecond)
	}
	if n := f.runner.Expired(); n != 1 {
		t.Fatalf("%d keys expired, want 1", n)
	}
}
