package redisstore

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// recordingRunner answers every script call with one decision and
// records what it was sent: by EvalSha and Eval as given, by the prepared
// path as the key and the arguments PrepareEvalSha joined.
type recordingRunner struct {
	keys, args []string
	prepared   bool
	evals      int
	reply      []int64
	err        error
}

func (r *recordingRunner) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	r.keys, r.args, r.prepared = keys, args, false
	return r.reply, r.err
}

func (r *recordingRunner) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	r.evals++
	r.keys, r.args, r.prepared = keys, args, false
	return r.reply, nil
}

// PrepareEvalSha joins args quoted, one a line: the packed rule may hold
// any byte.
func (r *recordingRunner) PrepareEvalSha(sha string, args []string) (string, string) {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	return sha, strings.Join(quoted, "\n")
}

func (r *recordingRunner) EvalShaPrepared(ctx context.Context, head, key, tail string) ([]int64, error) {
	if head != redisScriptSHA {
		return nil, errors.New("prepared for another script")
	}
	r.keys, r.args, r.prepared = []string{key}, nil, true
	for _, q := range strings.Split(tail, "\n") {
		a, err := strconv.Unquote(q)
		if err != nil {
			return nil, err
		}
		r.args = append(r.args, a)
	}
	return r.reply, r.err
}

// plainRunner hides recordingRunner's prepared path.
type plainRunner struct{ r *recordingRunner }

func (p plainRunner) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	return p.r.EvalSha(ctx, sha, keys, args)
}

func (p plainRunner) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	return p.r.Eval(ctx, script, keys, args)
}

// TestRedisPreparedCall: a request of one item goes through the runner's
// prepared path (takeOne) with the key and arguments the general path
// (call) sends for it, in both modes, for plain and hashed keys, under
// two stores with different prefixes sharing a zone; it decodes the
// reply alike; a per-key limit takes the general path; NOSCRIPT sends the
// script's text.
func TestRedisPreparedCall(t *testing.T) {
	z := newZone(t, "api", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 20, Cost: 2})
	reply := []int64{0, 3, 1500000, 42000000}
	want := ratelimit.Decision{Allowed: false, Limit: 20, Remaining: 3, RetryAfter: 1500 * time.Millisecond, ResetAfter: 42 * time.Second}
	for _, prefix := range []string{"a:", "b:", "a:"} {
		rec := &recordingRunner{reply: reply}
		fast, err := New(rec, Settings{KeyPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		gen := &recordingRunner{reply: reply}
		slow, _ := New(plainRunner{gen}, Settings{KeyPrefix: prefix})
		for _, key := range []string{"203.0.113.7", "", "#x", strings.Repeat("k", MaxKeyPart+1)} {
			for _, deferred := range []bool{false, true} {
				items := []ratelimit.Item{{Zone: z, Key: key, Refundable: deferred}}
				rec.reply, gen.reply = reply, reply
				if deferred { // a reservation's reply ends with its receipt and generation
					rec.reply = append(reply[:4:4], 0, 0)
					gen.reply = rec.reply
				}
				out, gout := make([]ratelimit.Decision, 1), make([]ratelimit.Decision, 1)
				allowed, err := fast.Take(context.Background(), time.Now(), items, out)
				gallowed, gerr := slow.Take(context.Background(), time.Now(), items, gout)
				if !rec.prepared || gen.prepared {
					t.Fatalf("prepared path taken: %v by the preparing runner, %v by the plain one", rec.prepared, gen.prepared)
				}
				if !reflect.DeepEqual(rec.keys, gen.keys) || !reflect.DeepEqual(rec.args, gen.args) {
					t.Fatalf("key %q deferred %v: prepared sent %q %q, general %q %q", key, deferred, rec.keys, rec.args, gen.keys, gen.args)
				}
				if allowed != gallowed || err != nil || gerr != nil || out[0] != gout[0] || out[0] != want {
					t.Fatalf("decisions: prepared %v %+v %v, general %v %+v %v", allowed, out[0], err, gallowed, gout[0], gerr)
				}
			}
		}
		// A key's own limit goes the general way.
		rec.reply = reply
		out := make([]ratelimit.Decision, 1)
		fast.Take(context.Background(), time.Now(), []ratelimit.Item{{Zone: z, Key: "k", Limit: 50}}, out)
		if rec.prepared || out[0].Limit != 50 {
			t.Fatalf("per-key limit: prepared %v, decision %+v", rec.prepared, out[0])
		}
		// NOSCRIPT: the script's text is sent, once.
		rec.err = errors.New("NOSCRIPT No matching script")
		if _, err := fast.Take(context.Background(), time.Now(), []ratelimit.Item{{Zone: z, Key: "k"}}, out); err != nil || rec.evals != 1 {
			t.Fatalf("after NOSCRIPT: %v, %d EVALs", err, rec.evals)
		}
		// Out of memory and a reply of the wrong length.
		rec.err = nil
		rec.reply = []int64{1, 3, 0, 42000000, redisNotCounted}
		if allowed, err := fast.Take(context.Background(), time.Now(), []ratelimit.Item{{Zone: z, Key: "k"}}, out); !allowed || !errors.Is(err, ErrOutOfMemory) {
			t.Fatalf("not counted: %v %v", allowed, err)
		}
		rec.reply = []int64{1, 3, 0}
		if _, err := fast.Take(context.Background(), time.Now(), []ratelimit.Item{{Zone: z, Key: "k"}}, out); err == nil || !strings.Contains(err.Error(), "got 3 integers") {
			t.Fatalf("short reply: %v", err)
		}
	}
}

// TestKeyCall: TakeKey with the store's KeyCall sends what Take of
// one item sends, for plain and hashed keys, and decides alike: an
// admission in the straight line, a denial through the guard (which then
// caches it), NOSCRIPT by sending the script's text, out of memory and a
// short reply as the guard's policy and error say. A store with no
// prepared path, or with CallerTime, has no KeyCall.
func TestKeyCall(t *testing.T) {
	z := newZone(t, "api", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 20, Cost: 2})
	ctx := context.Background()
	rec := &recordingRunner{}
	fast, err := New(rec, Settings{KeyPrefix: "a:"})
	if err != nil {
		t.Fatal(err)
	}
	gen := &recordingRunner{}
	slow, _ := New(plainRunner{gen}, Settings{KeyPrefix: "a:"})
	g := newGuard(t, fast, guard.Options{OnError: guard.FailDeny, NotCounted: ErrOutOfMemory})
	kc := fast.KeyCall(z, g)
	if kc == nil || kc.limit != 20 {
		t.Fatalf("KeyCall %+v", kc)
	}
	admit := []int64{1, 7, 0, 42000000}
	for _, key := range []string{"203.0.113.7", "", "#x", strings.Repeat("k", MaxKeyPart+1)} {
		rec.reply, gen.reply = admit, admit
		d := TakeKey(ctx, g, kc, z, key, time.Now())
		gout := make([]ratelimit.Decision, 1)
		slow.Take(ctx, time.Now(), []ratelimit.Item{{Zone: z, Key: key}}, gout)
		if !reflect.DeepEqual(rec.keys, gen.keys) || !reflect.DeepEqual(rec.args, gen.args) {
			t.Fatalf("key %q: the KeyCall sent %q %q, Take %q %q", key, rec.keys, rec.args, gen.keys, gen.args)
		}
		if d != gout[0] || !d.Allowed || d.Remaining != 7 {
			t.Fatalf("key %q: TakeKey %+v, Take %+v", key, d, gout[0])
		}
	}
	rec.reply = []int64{0, 0, 1500000, 42000000}
	if d := TakeKey(ctx, g, kc, z, "denied", time.Now()); d.Allowed || d.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("denial %+v", d)
	}
	if g.Stats().Denials != 1 {
		t.Fatalf("%d denials cached, want the one TakeKey met", g.Stats().Denials)
	}
	rec.reply = admit
	if d := TakeKey(ctx, g, kc, z, "denied", time.Now()); d.Allowed || g.Stats().CacheHits != 1 {
		t.Fatalf("the cached denial: %+v, %+v", d, g.Stats())
	}
	rec.err = errors.New("NOSCRIPT No matching script")
	if d := TakeKey(ctx, g, kc, z, "other", time.Now()); !d.Allowed || rec.evals != 1 {
		t.Fatalf("after NOSCRIPT: %+v, %d EVALs", d, rec.evals)
	}
	rec.err = nil
	rec.reply = []int64{1, 3, 0, 42000000, redisNotCounted}
	if d := TakeKey(ctx, g, kc, z, "oom", time.Now()); d.Allowed || g.Stats().OutOfMemory != 1 {
		t.Fatalf("not counted: %+v under deny, %+v", d, g.Stats())
	}
	rec.reply = []int64{1, 3, 0}
	if d := TakeKey(ctx, g, kc, z, "short", time.Now()); d.Allowed || g.Stats().Failures != 1 {
		t.Fatalf("short reply: %+v under deny, %+v", d, g.Stats())
	}
	if slow.KeyCall(z, g) != nil {
		t.Error("a runner that cannot prepare calls has a KeyCall")
	}
	if timed, _ := New(rec, Settings{CallerTime: true}); timed.KeyCall(z, g) != nil {
		t.Error("a store on the caller's clock has a KeyCall")
	}
}

// TestKeyCallBreakerOpen: once the guard's breaker is open, TakeKey sends
// nothing and the policy decides, as the guard's Take would; TakeKey
// reads the breaker through guard.Signals.
func TestKeyCallBreakerOpen(t *testing.T) {
	z := newZone(t, "api", ratelimit.Rule{Window: time.Minute, Limit: 20})
	ctx := context.Background()
	rec := &recordingRunner{err: errors.New("connection refused")}
	s, err := New(rec, Settings{KeyPrefix: "a:"})
	if err != nil {
		t.Fatal(err)
	}
	down := func(context.Context) error { return errors.New("still down") }
	g := newGuard(t, s, guard.Options{OnError: guard.FailDeny, Probe: down, ProbeInterval: time.Hour})
	kc := s.KeyCall(z, g)
	if d := TakeKey(ctx, g, kc, z, "k", time.Now()); d.Allowed || g.Stats().Failures != 1 {
		t.Fatalf("a failed call: %+v under deny, %+v", d, g.Stats())
	}
	rec.err, rec.reply, rec.keys = nil, []int64{1, 19, 0, 60000000}, nil
	if d := TakeKey(ctx, g, kc, z, "k", time.Now()); d.Allowed || rec.keys != nil {
		t.Fatalf("breaker open: %+v, sent %q; want denied by the policy, nothing sent", d, rec.keys)
	}
	if st := g.Stats(); st.Fallbacks != 2 {
		t.Fatalf("stats %+v, want the failure and the open breaker's request decided by the policy", st)
	}
}
