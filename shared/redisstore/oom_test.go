package redisstore

import (
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"

	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// oomRule is the rule of the OOM tests: an hour, so that no window passes
// while a test runs.
var oomRule = ratelimit.Rule{Window: time.Hour, SubWindow: 6 * time.Minute, Limit: 5}

// startSmallRedis runs a redis-server with a small maxmemory and the
// default noeviction policy.
func startSmallRedis(t *testing.T) *redistest.Server {
	t.Helper()
	return redistest.Start(t, "--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
}

// fillRedis pushes the server past its maxmemory with junk keys written in
// one script (only a script's first write is checked against maxmemory).
func fillRedis(t *testing.T, s *redistest.Server) {
	t.Helper()
	s.Do(t, "EVAL", `for i = 1, 40000 do redis.call('SET', 'junk:' .. i, string.rep('x', 64)) end`, "0")
	if !overMaxmemory(t, s) {
		t.Fatal("redis is not over maxmemory after the fill")
	}
}

// overMaxmemory reports whether the server refuses a plain write for
// memory.
func overMaxmemory(t *testing.T, s *redistest.Server) bool {
	t.Helper()
	c := newClient(t, resp.Options{Addrs: []string{s.Addr()}, ReadTimeout: 2 * time.Second})
	_, err := c.Do(context.Background(), "SET", "oom:probe", "x")
	if err != nil && strings.HasPrefix(err.Error(), "OOM") {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Do(t, "DEL", "oom:probe")
	return false
}

func newOOMGuard(t *testing.T, store *Store, policy guard.FailurePolicy) *guard.Guard {
	t.Helper()
	// The probe would close an open breaker only after an hour: a trip
	// shows in Stats().Open for the rest of the test.
	return newGuard(t, store, guard.Options{OnError: policy, Probe: store.Ping, ProbeInterval: time.Hour, NotCounted: ErrOutOfMemory})
}

// TestRedisOOMFlood is a flood of fresh keys into a small Redis: about 12,500
// keys push a 3 MB Redis past maxmemory (noeviction). A client at its
// limit, asked through the flooded instance (whose denial cache has not
// seen it: another instance denied it), is never admitted, and the breaker
// stays closed: Redis still answers.
func TestRedisOOMFlood(t *testing.T) {
	s := startSmallRedis(t)
	store, _ := newStore(t, s.Addr())
	z := newZone(t, "flood", oomRule)
	other := newOOMGuard(t, store, guard.FailAllow)
	for i := int64(0); i <= oomRule.Limit; i++ {
		take1(t, other, time.Now(), z, "victim")
	}
	g := newOOMGuard(t, store, guard.FailAllow)
	flood := 0
	for ; flood < 30000 && !(flood%500 == 0 && overMaxmemory(t, s)); flood++ {
		take1(t, g, time.Now(), z, "flood-"+strconv.Itoa(flood))
	}
	if flood == 30000 {
		t.Fatal("30,000 keys did not fill 3 MB")
	}
	t.Logf("redis over maxmemory after %d fresh keys", flood)
	// Just over maxmemory, used_memory may dip back under it between
	// requests (client buffers come and go): lower maxmemory well under
	// what is used, so that every fresh key below is refused.
	s.Do(t, "CONFIG", "SET", "maxmemory", "1mb")
	admitted := 0
	for i := 0; i < 20; i++ {
		take1(t, g, time.Now(), z, "more-"+strconv.Itoa(i))
		if take1(t, g, time.Now(), z, "victim").Allowed {
			admitted++
		}
	}
	t.Logf("the client at its limit admitted %d times of 20 while redis was out of memory", admitted)
	if admitted != 0 {
		t.Errorf("the client at its limit was admitted %d times of 20 while redis was out of memory", admitted)
	}
	if st := g.Stats(); st.Open || st.Failures != 0 || st.OutOfMemory < 20 || st.Fallbacks != st.OutOfMemory {
		t.Errorf("stats %+v: want the breaker closed, no failures, the uncounted admissions in OutOfMemory and Fallbacks", st)
	}
}

// TestRedisOOMPolicies: while Redis is out of memory, what it denies stays
// denied, and what it would admit but cannot count is decided by the
// failure policy, without tripping the breaker. When memory frees, new
// keys are counted again.
func TestRedisOOMPolicies(t *testing.T) {
	s := startSmallRedis(t)
	store, _ := newStore(t, s.Addr())
	for _, tc := range []struct {
		policy guard.FailurePolicy
		want   []bool // a fresh key, Limit+1 times
	}{
		{guard.FailAllow, []bool{true, true, true, true, true, true}},
		{guard.FailDeny, []bool{false, false, false, false, false, false}},
		{guard.FailLocal, []bool{true, true, true, true, true, false}},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			s.Do(t, "FLUSHALL")
			z := newZone(t, "p-"+tc.policy.String(), oomRule)
			g := newOOMGuard(t, store, tc.policy)
			for i := int64(0); i < oomRule.Limit; i++ {
				take1(t, g, time.Now(), z, "victim")
			}
			fillRedis(t, s)
			// A fresh guard: its denial cache does not know the victim.
			g2 := newOOMGuard(t, store, tc.policy)
			for i := 0; i < 10; i++ {
				if d := take1(t, g2, time.Now(), z, "victim"); d.Allowed || d.RetryAfter <= 0 {
					t.Fatalf("knock %d of the client at its limit: %+v, want denied by redis", i, d)
				}
			}
			for i, want := range tc.want {
				if d := take1(t, g2, time.Now(), z, "fresh"); d.Allowed != want {
					t.Fatalf("fresh key, request %d: %+v, want allowed %v", i, d, want)
				}
			}
			if n := s.Do(t, "EXISTS", Key("t:", z.Name(), "fresh")); n[0] != "0" {
				t.Fatal("the fresh key was written while redis was out of memory")
			}
			st := g2.Stats()
			if st.Open || st.Failures != 0 || st.OutOfMemory != uint64(len(tc.want)) || st.Fallbacks != st.OutOfMemory {
				t.Fatalf("stats %+v: want the breaker closed, no failures, %d out of memory", st, len(tc.want))
			}
			// Memory frees: the next request is counted in Redis.
			s.Do(t, "EVAL", `for _, k in ipairs(redis.call('KEYS', 'junk:*')) do redis.call('DEL', k) end`, "0")
			if d := take1(t, g2, time.Now(), z, "after"); !d.Allowed || d.Remaining != oomRule.Limit-1 {
				t.Fatalf("after memory freed: %+v", d)
			}
			if n := s.Do(t, "EXISTS", Key("t:", z.Name(), "after")); n[0] != "1" {
				t.Fatal("a key was not written after memory freed")
			}
			if st := g2.Stats(); st.OutOfMemory != uint64(len(tc.want)) {
				t.Fatalf("stats after recovery: %+v", st)
			}
		})
	}
}

// TestRedisOOMWritesNothing: a request Redis would admit while it is out
// of memory leaves every key as it was, for each algorithm, a multi-item
// request, a key in its next sub-window and a key of another rule; the
// store reports ErrOutOfMemory with Redis's decisions.
func TestRedisOOMWritesNothing(t *testing.T) {
	s := startSmallRedis(t)
	store, _ := newStore(t, s.Addr())
	store.callerTime = true
	sliding := newZone(t, "w-sliding", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 5})
	fixed := newZone(t, "w-fixed", ratelimit.Rule{Window: time.Minute, Limit: 5, Algorithm: ratelimit.Fixed})
	logz := newZone(t, "w-log", ratelimit.Rule{Window: time.Minute, Limit: 5, Algorithm: ratelimit.Log})
	other := newZone(t, "w-sliding", ratelimit.Rule{Window: time.Minute, SubWindow: 2 * time.Second, Limit: 5})
	ctx := context.Background()
	now := epoch
	for _, z := range []*ratelimit.Zone{sliding, fixed, logz} {
		take1(t, store, now, z, "old")
	}
	fillRedis(t, s)
	dump := func() string {
		var b strings.Builder
		for _, z := range []*ratelimit.Zone{sliding, fixed, logz} {
			for _, k := range []string{"old", "new"} {
				key := Key("t:", z.Name(), k)
				b.WriteString(strings.Join(s.Do(t, "EVAL", `
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' then return redis.call('HGETALL', KEYS[1]) end
if t == 'zset' then return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES') end
return {t}`, "1", key), ",") + ";")
			}
		}
		return b.String()
	}
	before := dump()
	for _, tc := range []struct {
		name  string
		at    time.Time
		items []ratelimit.Item
	}{
		{"sliding-new", now, []ratelimit.Item{{Zone: sliding, Key: "new"}}},
		{"sliding-same-sub-window", now, []ratelimit.Item{{Zone: sliding, Key: "old"}}},
		{"sliding-next-sub-window", now.Add(6 * time.Second), []ratelimit.Item{{Zone: sliding, Key: "old"}}},
		{"sliding-far", now.Add(2 * time.Minute), []ratelimit.Item{{Zone: sliding, Key: "old"}}},
		{"fixed", now, []ratelimit.Item{{Zone: fixed, Key: "old"}}},
		{"log-new", now, []ratelimit.Item{{Zone: logz, Key: "new"}}},
		{"log-old", now.Add(time.Second), []ratelimit.Item{{Zone: logz, Key: "old"}}},
		{"other-rule", now, []ratelimit.Item{{Zone: other, Key: "old"}}},
		{"multi", now, []ratelimit.Item{{Zone: sliding, Key: "new"}, {Zone: logz, Key: "old"}, {Zone: fixed, Key: "new"}}},
		{"multi-log-first", now, []ratelimit.Item{{Zone: logz, Key: "new"}, {Zone: sliding, Key: "old"}}},
	} {
		out := make([]ratelimit.Decision, len(tc.items))
		ok, err := store.Take(ctx, tc.at, tc.items, out)
		if !errors.Is(err, ErrOutOfMemory) || !ok {
			t.Fatalf("%s: %v, %v; want ErrOutOfMemory", tc.name, ok, err)
		}
		for i, d := range out {
			if !d.Allowed || d.Limit != 5 || d.Remaining >= 5 {
				t.Fatalf("%s: decision %d is %+v, want redis's admission", tc.name, i, d)
			}
		}
		if after := dump(); after != before {
			t.Fatalf("%s wrote while redis was out of memory:\nbefore %s\nafter  %s", tc.name, before, after)
		}
	}
}

// TestRedisOOMReply: the store reads the script's reply by its length: 4
// integers per item, and one more (1) when Redis could not count the
// request. Any other length is an error, in one call and in Cluster mode.
func TestRedisOOMReply(t *testing.T) {
	a := newZone(t, "ra", ratelimit.Rule{Window: time.Minute, Limit: 5})
	b := newZone(t, "rb", ratelimit.Rule{Window: time.Minute, Limit: 7})
	admit := []int64{1, 4, 0, 60e6}
	deny := []int64{0, 0, 5e6, 60e6}
	reply := func(rows ...[]int64) []int64 {
		var r []int64
		for _, row := range rows {
			r = append(r, row...)
		}
		return r
	}
	oom := []int64{1}
	for _, tc := range []struct {
		name    string
		cluster bool
		items   []ratelimit.Item
		replies [][]int64
		ok      bool
		err     string // "" none, "oom" ErrOutOfMemory, else part of the error
	}{
		{"one", false, []ratelimit.Item{{Zone: a, Key: "k"}}, [][]int64{admit}, true, ""},
		{"one-oom", false, []ratelimit.Item{{Zone: a, Key: "k"}}, [][]int64{reply(admit, oom)}, true, "oom"},
		{"one-short", false, []ratelimit.Item{{Zone: a, Key: "k"}}, [][]int64{admit[:3]}, false, "got 3 integers for 1 keys"},
		{"one-bad-marker", false, []ratelimit.Item{{Zone: a, Key: "k"}}, [][]int64{reply(admit, []int64{7})}, false, "got 5 integers for 1 keys"},
		{"one-long", false, []ratelimit.Item{{Zone: a, Key: "k"}}, [][]int64{reply(admit, oom, oom)}, false, "got 6 integers for 1 keys"},
		{"two", false, []ratelimit.Item{{Zone: a, Key: "k"}, {Zone: b, Key: "k"}}, [][]int64{reply(admit, admit)}, true, ""},
		{"two-oom", false, []ratelimit.Item{{Zone: a, Key: "k"}, {Zone: b, Key: "k"}}, [][]int64{reply(admit, admit, oom)}, true, "oom"},
		{"two-one-row", false, []ratelimit.Item{{Zone: a, Key: "k"}, {Zone: b, Key: "k"}}, [][]int64{reply(admit, oom)}, false, "got 5 integers for 2 keys"},
		{"two-deny", false, []ratelimit.Item{{Zone: a, Key: "k"}, {Zone: b, Key: "k"}}, [][]int64{reply(admit, deny)}, false, ""},
		{"cluster-oom-then-deny", true, []ratelimit.Item{{Zone: a, Key: "x"}, {Zone: b, Key: "y"}}, [][]int64{reply(admit, oom), deny}, false, ""},
		{"cluster-oom-then-admit", true, []ratelimit.Item{{Zone: a, Key: "x"}, {Zone: b, Key: "y"}}, [][]int64{reply(admit, oom), admit}, true, "oom"},
		{"cluster-admit-then-oom", true, []ratelimit.Item{{Zone: a, Key: "x"}, {Zone: b, Key: "y"}}, [][]int64{admit, reply(admit, oom)}, true, "oom"},
		{"cluster-oom-short", true, []ratelimit.Item{{Zone: a, Key: "x"}, {Zone: b, Key: "y"}}, [][]int64{admit, {1, 1, 1, 1, 1, 1}}, false, "got 6 integers for 1 keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &replyRunner{replies: tc.replies}
			store, err := New(run, Settings{Cluster: tc.cluster})
			if err != nil {
				t.Fatal(err)
			}
			out := make([]ratelimit.Decision, len(tc.items))
			ok, err := store.Take(context.Background(), time.Time{}, tc.items, out)
			switch {
			case tc.err == "" && err != nil, tc.err == "oom" && !errors.Is(err, ErrOutOfMemory):
				t.Fatalf("error %v, want %q", err, tc.err)
			case tc.err != "" && tc.err != "oom" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
			if err == nil || errors.Is(err, ErrOutOfMemory) {
				if ok != tc.ok {
					t.Fatalf("allowed %v, want %v (%+v)", ok, tc.ok, out)
				}
				if out[0].Limit != 5 || out[1%len(out)].Limit == 0 {
					t.Fatalf("decisions not filled: %+v", out)
				}
			}
			if run.calls != len(tc.replies) {
				t.Fatalf("%d calls, want %d", run.calls, len(tc.replies))
			}
		})
	}
}

// replyRunner answers each call with the next of its replies.
type replyRunner struct {
	replies [][]int64
	calls   int
}

func (r *replyRunner) EvalSha(_ context.Context, _ string, keys, _ []string) ([]int64, error) {
	if r.calls >= len(r.replies) {
		return nil, errors.New("unexpected call")
	}
	r.calls++
	return r.replies[r.calls-1], nil
}

func (r *replyRunner) Eval(ctx context.Context, _ string, keys, args []string) ([]int64, error) {
	return r.EvalSha(ctx, "", keys, args)
}

// TestOutOfMemoryEvent: the guard's event of ErrOutOfMemory, a request
// Redis would admit but could not count, tells the operator what to do.
func TestOutOfMemoryEvent(t *testing.T) {
	var events []guard.Event
	opts := guard.Options{OnError: guard.FailLocal, Store: "redis", NotCounted: ErrOutOfMemory}
	g, err := guard.NewLogged(notCountingStore{}, opts, func(e guard.Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	z := newZone(t, "oom", ratelimit.Rule{Window: time.Minute, Limit: 5})
	out := make([]ratelimit.Decision, 1)
	g.Take(context.Background(), time.Now(), []ratelimit.Item{{Zone: z, Key: "k"}}, out)
	if len(events) != 1 || !events[0].NotCounted() {
		t.Fatalf("events %+v, want one of a request not counted", events)
	}
	want := "redis is out of memory (maxmemory reached): requests it would admit cannot be counted; raise maxmemory or see the sizing guide; they are decided by <OnError> local"
	if got := events[0].Message(&ratelimit.Spelling{guard.FieldOnStoreError: "<OnError>"}); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// notCountingStore admits every request and counts none, as Redis over
// its maxmemory answers.
type notCountingStore struct{}

func (notCountingStore) Take(_ context.Context, _ time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	for i := range out {
		out[i] = ratelimit.Decision{Allowed: true, Limit: 5, Remaining: 4}
	}
	return true, ErrOutOfMemory
}
