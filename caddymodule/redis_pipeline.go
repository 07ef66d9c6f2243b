package caddymodule

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/windowlimit/windowlimit/shared/guard"
)

// pipeliner coalesces the script calls of concurrent requests into go-redis
// pipelines: calls that arrive while the pipelines in flight are busy go
// out together in the next one, in one write and one read on one pooled
// connection. Unpipelined, the write and the read system calls of each
// decision took about a third of Caddy's CPU under load, and a quarter of
// redis-server's (scripts/bench-caddy.sh, its Redis site).
//
// Each call gets its own reply or error: a Redis error (NOSCRIPT, OOM) is
// one command's, a broken connection fails the calls of its pipeline. A
// ClusterClient's pipeline sends each command to the node of its key's
// slot and follows MOVED and ASK per command.
type pipeliner struct {
	// client returns the client to send the next pipeline through; the
	// runner may replace it.
	client func() redis.UniversalClient
	// timeout bounds one pipeline: getting a connection (dialling one if
	// needed), the write and the read, go-redis's retry included; zero
	// means no bound but the client's own. A call waits at most for the
	// pipelines in flight and then its own.
	timeout time.Duration
	// inFlight is the most pipelines sent at once, each on its own
	// connection.
	inFlight int

	mu      sync.Mutex
	queue   []*scriptCall // waiting for a pipeline
	running int           // pipelines in flight

	// pipelines counts the pipelines sent, for tests.
	pipelines atomic.Uint64
}

// Bounds of a pipeliner.
const (
	// defaultPipelines is the most pipelines in flight: while one is at
	// Redis, the next fills. A second one in flight halved the batches
	// (about 6 calls per read against 10 in scripts/bench-caddy.sh's
	// Redis site), and each read and write costs Caddy and Redis a
	// system call: the site served 0.51-0.53 of its base with two,
	// 0.54-0.66 with one, in interleaved runs.
	defaultPipelines = 1
	// maxPipelineLen bounds the commands of one pipeline, so one write
	// stays small and the calls queued behind it start soon.
	maxPipelineLen = 128
)

// scriptCall is one script call waiting for its pipeline. Calls are
// pooled with their arguments and command, so that a call allocates only
// its reply.
type scriptCall struct {
	args   []interface{} // the command's, which cmd holds
	key    string        // the key of a prepared call, which args may point to
	cmd    *redis.IntSliceCmd
	queued time.Time     // when do queued it
	done   chan struct{} // receives once the reply is in cmd
}

// newCall returns a call from the pool, its args empty.
func newCall() *scriptCall { return callPool.Get().(*scriptCall) }

// errBacklog is the error of a call that waited for a free pipeline
// longer than a pipeline may take: Redis is too slow for the calls that
// arrive, and sending it would only make the calls behind it wait longer.
// It wraps guard.ErrOverloaded: the load is this instance's, so the
// guard lets on_store_error decide the call without opening its breaker,
// which a flood could otherwise hold open with its own backlog.
var errBacklog = fmt.Errorf("redis pipeline: waited longer than the pipeline timeout for a free pipeline: %w", guard.ErrOverloaded)

var callPool = sync.Pool{New: func() any {
	return &scriptCall{args: make([]interface{}, 0, 16), done: make(chan struct{}, 1)}
}}

// batchPool holds the slices pipelines take their calls in.
var batchPool = sync.Pool{New: func() any { return make([]*scriptCall, 0, maxPipelineLen) }}

func newPipeliner(client func() redis.UniversalClient, timeout time.Duration) *pipeliner {
	return &pipeliner{client: client, timeout: timeout, inFlight: defaultPipelines}
}

// do sends c's args as a command in a pipeline and waits for its reply
// or ctx's end; c goes back to the pool. When a pipeline is free, a
// goroutine sends the queue at once; the calls that arrive meanwhile go
// together in the next pipeline that frees up. The caller never sends
// itself, so that its context can always end its wait.
func (p *pipeliner) do(ctx context.Context, c *scriptCall) ([]int64, error) {
	cmd := c.cmd
	if cmd == nil || !sameSlice(cmd.Args(), c.args) {
		// The command holds the slice it is given: one made for an
		// earlier call of the same length sends this one's args. A
		// pipeline never reads the command's context.
		cmd = redis.NewIntSliceCmd(context.Background(), c.args...)
		c.cmd = cmd
	}
	c.queued = time.Now()
	p.mu.Lock()
	p.queue = append(p.queue, c)
	var batch []*scriptCall
	if p.running < p.inFlight {
		p.running++
		batch = p.takeLocked()
	}
	p.mu.Unlock()
	if batch != nil {
		go p.loop(batch)
	}
	select {
	case <-c.done:
		res, err := cmd.Result()
		cmd.SetVal(nil)
		cmd.SetErr(nil)
		clear(c.args) // the pool holds no key
		c.args, c.key = c.args[:0], ""
		callPool.Put(c)
		return res, err
	case <-ctx.Done():
		// Abandoned: its pipeline still completes it, into a channel
		// nobody reads, so c is not reused.
		return nil, ctx.Err()
	}
}

// sameSlice reports whether a and b are the same elements of one array.
func sameSlice(a, b []interface{}) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// loop sends pipelines until the queue is empty. Between two, it yields
// the processor once: the requests already runnable, the callers it just
// answered among them, queue their calls first and go out together in the
// next pipeline, rather than in several short ones. That is one
// scheduling round, never a wait for anything else: with nothing else
// runnable the loop goes on at once. Each pipeline costs Caddy a write, a
// read and the wake-up of this goroutine whatever its length: through
// scripts/bench-caddy.sh's Redis site, Redis read 12.5 to 13.1 calls per
// read system call with the yield, 10.2 to 10.8 without, in runs of the
// two builds in turn.
func (p *pipeliner) loop(batch []*scriptCall) {
	for batch != nil {
		p.send(batch)
		runtime.Gosched()
		batch = p.next()
	}
}

// next returns the calls to send in the next pipeline, or nil, and frees
// the pipeline's slot, when none wait.
func (p *pipeliner) next() []*scriptCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		p.running--
		return nil
	}
	return p.takeLocked()
}

// takeLocked takes up to maxPipelineLen calls off the queue.
func (p *pipeliner) takeLocked() []*scriptCall {
	if len(p.queue) <= maxPipelineLen {
		batch := p.queue
		p.queue = batchPool.Get().([]*scriptCall)
		return batch
	}
	batch := append(batchPool.Get().([]*scriptCall), p.queue[:maxPipelineLen]...)
	n := copy(p.queue, p.queue[maxPipelineLen:])
	clear(p.queue[n:])
	p.queue = p.queue[:n]
	return batch
}

// send runs batch as one pipeline and completes its calls. A call that
// already waited longer than a pipeline may take fails with errBacklog
// unsent, so that a call waits at most for the pipelines in flight and
// then its own however long the queue grew while Redis was slow.
func (p *pipeliner) send(batch []*scriptCall) {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if p.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
	}
	late := time.Time{}
	if p.timeout > 0 {
		late = time.Now().Add(-p.timeout)
	}
	pipe := p.client().Pipeline()
	for _, c := range batch {
		if c.queued.Before(late) {
			c.cmd.SetErr(errBacklog)
			continue
		}
		pipe.Process(ctx, c.cmd)
	}
	// Every command carries its own error, but for a failure before the
	// write (no connection): go-redis then sets none.
	var err error
	if pipe.Len() > 0 {
		p.pipelines.Add(1)
		_, err = pipe.Exec(ctx)
	}
	cancel()
	for i, c := range batch {
		if err != nil && c.cmd.Err() == nil && c.cmd.Val() == nil {
			c.cmd.SetErr(err)
		}
		c.done <- struct{}{}
		batch[i] = nil
	}
	if cap(batch) == maxPipelineLen {
		batchPool.Put(batch[:0])
	}
}
