package caddymodule

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// goRedisRunner runs the limiter script over go-redis, which brings Redis
// Cluster, Sentinel and its pool to the Caddy module. It implements
// redisstore.ScriptRunner; the store handles NOSCRIPT.
//
// Its client can be replaced while it runs. After pool_size failed dials a
// go-redis pool stops dialling and retries the server only once a second,
// so a client that lived through an outage may go on failing for up to a
// second after Redis is back. probe therefore asks Redis through a fresh
// client, and the first one that gets an answer takes over.
type goRedisRunner struct {
	cur  atomic.Pointer[clientRef]
	pipe *pipeliner

	// cluster reports a ClusterClient, which reads keys as strings; the
	// runner's clients, replaced or not, are all of one kind.
	cluster bool
	// The arguments of prepared calls: prep maps a tail (see
	// PrepareEvalSha) to its *preparedArgs, read without a lock by the
	// requests of every zone on this client; prepSize counts its entries.
	// last is the one used last.
	last     atomic.Pointer[preparedArgs]
	prep     atomic.Pointer[sync.Map]
	prepSize atomic.Int64

	mu     sync.Mutex // guards closed and retired
	closed bool
	// retired holds the replaced clients not closed yet, each with the
	// timer that will close it.
	retired map[redis.UniversalClient]*time.Timer
}

type clientRef struct{ c redis.UniversalClient }

// retiredClientGrace is how long a replaced client stays open for the
// requests that were already using it.
const retiredClientGrace = 5 * time.Second

// newGoRedisRunner returns a runner over client; closing the runner
// closes it.
func newGoRedisRunner(client redis.UniversalClient) *goRedisRunner {
	r := new(goRedisRunner)
	r.cur.Store(&clientRef{client})
	_, r.cluster = client.(*redis.ClusterClient)
	r.prep.Store(new(sync.Map))
	r.pipe = newPipeliner(r.client, pipelineTimeout(client))
	return r
}

func (r *goRedisRunner) client() redis.UniversalClient { return r.cur.Load().c }

// pipelineTimeout is the longest a pipeline of c may take: a dial, a
// write and a read; zero, for no bound, when c has no timeouts.
func pipelineTimeout(c redis.UniversalClient) time.Duration {
	var dial, write, read time.Duration
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		dial, write, read = o.DialTimeout, o.WriteTimeout, o.ReadTimeout
	case *redis.ClusterClient:
		o := c.Options()
		dial, write, read = o.DialTimeout, o.WriteTimeout, o.ReadTimeout
		if dial == 0 {
			dial = 5 * time.Second // go-redis's default, filled in per node
		}
	}
	if dial <= 0 || write <= 0 || read <= 0 {
		return 0
	}
	return dial + write + read
}

// EvalSha implements redisstore.ScriptRunner.
func (r *goRedisRunner) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	return r.script(ctx, "evalsha", sha, keys, args)
}

// Eval implements redisstore.ScriptRunner.
func (r *goRedisRunner) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	return r.script(ctx, "eval", script, keys, args)
}

// script sends EVAL or EVALSHA. Its reply is read as an array of integers
// straight into a []int64, without go-redis's generic reply values.
func (r *goRedisRunner) script(ctx context.Context, name, script string, keys, args []string) ([]int64, error) {
	c := newCall()
	c.args = append(c.args, name, script, numKeys(len(keys)))
	for _, k := range keys {
		c.args = append(c.args, k)
	}
	for _, v := range args {
		c.args = append(c.args, v)
	}
	return r.pipe.do(ctx, c)
}

// PrepareEvalSha makes the runner a prepared runner of the Redis store,
// whose calls on one key (every request of a zone without count_status)
// then box no argument but the key: head is sha, and tail names args,
// whose boxed values the runner keeps for EvalShaPrepared.
func (r *goRedisRunner) PrepareEvalSha(sha string, args []string) (head, tail string) {
	tail = encodeArgs(args)
	r.prepared(sha, tail)
	return sha, tail
}

// EvalShaPrepared runs EVALSHA of head, the script's SHA1, on key with the
// arguments that tail, from PrepareEvalSha, names.
func (r *goRedisRunner) EvalShaPrepared(ctx context.Context, head, key, tail string) ([]int64, error) {
	p := r.prepared(head, tail)
	c := newCall()
	c.key = key
	c.args = append(c.args, p.head...)
	if r.cluster {
		// A ClusterClient finds the key's node from it as a string.
		c.args = append(c.args, key)
	} else {
		// A pointer boxes without allocating; the pooled call outlives
		// the command.
		c.args = append(c.args, &c.key)
	}
	c.args = append(c.args, p.args...)
	return r.pipe.do(ctx, c)
}

// preparedArgs are the arguments of a prepared call, boxed once: head,
// the command, the SHA1 and the key count, then the key, then args.
type preparedArgs struct {
	sha, tail string
	head      []interface{}
	args      []interface{}
}

// maxPrepared bounds the prepared calls a runner keeps: reloads with ever
// new rules cannot grow it past that.
const maxPrepared = 1024

// prepared returns the boxed arguments of an EVALSHA of sha with the
// arguments tail names: the last ones asked for without a lookup (the
// common case: one zone on a client), else from the runner's map, else
// decoded and kept.
func (r *goRedisRunner) prepared(sha, tail string) *preparedArgs {
	if p := r.last.Load(); p != nil && p.tail == tail && p.sha == sha {
		return p
	}
	m := r.prep.Load()
	if v, ok := m.Load(tail); ok && v.(*preparedArgs).sha == sha {
		p := v.(*preparedArgs)
		r.last.Store(p)
		return p
	}
	p := &preparedArgs{sha: sha, tail: tail, head: []interface{}{"evalsha", sha, "1"}}
	for _, a := range decodeArgs(tail) {
		p.args = append(p.args, a)
	}
	if r.prepSize.Add(1) > maxPrepared {
		// Full: start afresh. What a racing call kept in the old map is
		// decoded again when next asked for.
		m = new(sync.Map)
		r.prep.Store(m)
		r.prepSize.Store(1)
	}
	m.Store(tail, p)
	r.last.Store(p)
	return p
}

// encodeArgs encodes args in one string, each as its length, a colon and
// its bytes (the script's rule argument is binary).
func encodeArgs(args []string) string {
	var b []byte
	for _, a := range args {
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, ':')
		b = append(b, a...)
	}
	return string(b)
}

// decodeArgs reverses encodeArgs; it stops at anything encodeArgs would
// not write.
func decodeArgs(tail string) []string {
	var args []string
	for tail != "" {
		i := strings.IndexByte(tail, ':')
		if i < 0 {
			break
		}
		n, err := strconv.Atoi(tail[:i])
		if err != nil || n < 0 || n > len(tail)-i-1 {
			break
		}
		args = append(args, tail[i+1:i+1+n])
		tail = tail[i+1+n:]
	}
	return args
}

// numKeys returns n as the text a ClusterClient reads to find the first
// key of EVAL and EVALSHA ("0" sends the call to any node).
func numKeys(n int) interface{} {
	if n < len(smallCounts) {
		return smallCounts[n]
	}
	return strconv.Itoa(n)
}

var smallCounts = [...]interface{}{"0", "1", "2", "3", "4", "5", "6", "7", "8"}

// probe checks, for the breaker, that Redis answers the script through a
// client made by newClient; if it does, that client replaces the
// runner's.
func (r *goRedisRunner) probe(ctx context.Context, newClient func() redis.UniversalClient, opts redisstore.Settings) error {
	fresh := newClient()
	store, err := redisstore.New(newGoRedisRunner(fresh), opts)
	if err == nil {
		err = store.Ping(ctx)
	}
	if err != nil {
		fresh.Close()
		return err
	}
	r.replace(fresh)
	return nil
}

// replace makes c the runner's client and closes the old one after
// retiredClientGrace.
func (r *goRedisRunner) replace(c redis.UniversalClient) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return
	}
	old := r.cur.Swap(&clientRef{c}).c
	if r.retired == nil {
		r.retired = make(map[redis.UniversalClient]*time.Timer)
	}
	r.retired[old] = time.AfterFunc(retiredClientGrace, func() {
		r.mu.Lock()
		_, ours := r.retired[old] // Close may have taken it
		delete(r.retired, old)
		r.mu.Unlock()
		if ours {
			old.Close()
		}
	})
}

// Close closes the client and the replaced ones still open.
func (r *goRedisRunner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	for c, t := range r.retired {
		t.Stop()
		c.Close()
	}
	r.retired = nil
	return r.client().Close()
}
