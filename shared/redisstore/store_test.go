package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// epoch is a realistic time, so float precision is tested at today's
// magnitudes (microseconds since 1970 need 51 bits).
var equivalenceRules = []struct {
	name string
	rule ratelimit.Rule
}{
	{"sliding", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 20}},
	{"sliding-cost", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 20, Cost: 3}},
	{"sliding-odd", ratelimit.Rule{Window: 7 * time.Second, SubWindow: time.Second, Limit: 7}},
	{"strict", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 20, Algorithm: ratelimit.Strict}},
	{"fixed", ratelimit.Rule{Window: time.Minute, Limit: 20, Algorithm: ratelimit.Fixed}},
	{"log", ratelimit.Rule{Window: time.Minute, Limit: 10, Algorithm: ratelimit.Log}},
	{"log-cost", ratelimit.Rule{Window: 10 * time.Second, Limit: 10, Algorithm: ratelimit.Log, Cost: 2}},
}

// TestRedisMatchesMemory replays one random trace through a Zone and
// through the Redis script, with the script told the trace's time, and
// wants the same decisions. Times are whole microseconds, the script's
// unit; RetryAfter of the weighted sliding count may differ by rounding
// (the Zone computes in nanoseconds at 1.7e18, where float64 steps are
// 256 ns), so it is compared to 2 µs.
func TestRedisMatchesMemory(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			addr := be.start(t)
			for _, tc := range equivalenceRules {
				t.Run(tc.name, func(t *testing.T) {
					store, _ := newStore(t, addr)
					store.callerTime = true
					mem := newZone(t, tc.name, tc.rule)
					red := newZone(t, tc.name+"-"+strconv.FormatInt(time.Now().UnixNano(), 36), tc.rule)
					rng := rand.New(rand.NewSource(1))
					now := epoch
					rule := mem.Rule()
					window := int64(rule.Window / time.Microsecond)
					span := int64(rule.SubWindow / time.Microsecond)
					denied := 0
					for step := 0; step < 600; step++ {
						// Three keys at 4/3 of the limit's rate on average, with
						// now and then a jump of up to a window and a half.
						gap := rng.Int63n(window / (2 * rule.Limit))
						if rng.Intn(80) == 0 {
							gap = rng.Int63n(window + window/2 + span)
						}
						now = now.Add(time.Duration(gap) * time.Microsecond)
						key := string(rune('a' + rng.Intn(3)))
						want := ratelimit.TakeAt(mem, key, now)
						got := take1(t, store, now, red, key)
						if !want.Allowed {
							denied++
						}
						if got.Allowed != want.Allowed || got.Remaining != want.Remaining || got.Limit != want.Limit {
							t.Fatalf("step %d key %s: redis %+v, memory %+v", step, key, got, want)
						}
						if got.ResetAfter != want.ResetAfter.Truncate(time.Microsecond) && got.ResetAfter != want.ResetAfter {
							t.Fatalf("step %d key %s: reset: redis %v, memory %v", step, key, got.ResetAfter, want.ResetAfter)
						}
						if d := got.RetryAfter - want.RetryAfter; d < -2*time.Microsecond || d > 2*time.Microsecond {
							t.Fatalf("step %d key %s: retry: redis %v, memory %v", step, key, got.RetryAfter, want.RetryAfter)
						}
					}
					if denied == 0 {
						t.Fatal("the trace denied nothing: it tests too little")
					}
				})
			}
		})
	}
}

// TestRedisServerTime runs the script on the server's clock (miniredis's,
// which the test sets) rather than a time passed in.
func TestRedisServerTime(t *testing.T) {
	m := miniredis.RunT(t)
	store, _ := newStore(t, m.Addr())
	z := newZone(t, "time", ratelimit.Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 2})
	m.SetTime(epoch)
	for i, wantAllowed := range []bool{true, true, false} {
		if d := take1(t, store, time.Time{}, z, "k"); d.Allowed != wantAllowed {
			t.Fatalf("request %d: allowed %v, want %v", i, d.Allowed, wantAllowed)
		}
	}
	m.SetTime(epoch.Add(11 * time.Second))
	if d := take1(t, store, time.Time{}, z, "k"); !d.Allowed {
		t.Fatalf("after the window: %+v, want allowed", d)
	}
}

// TestRedisAllOrNothing: a request is counted in every zone only if all
// allow it.
func TestRedisAllOrNothing(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			store, _ := newStore(t, be.start(t))
			store.callerTime = true
			wide := newZone(t, "wide", ratelimit.Rule{Window: time.Minute, Limit: 10})
			narrow := newZone(t, "narrow", ratelimit.Rule{Window: time.Minute, Limit: 2})
			logz := newZone(t, "logz", ratelimit.Rule{Window: time.Minute, Limit: 5, Algorithm: ratelimit.Log})
			items := []ratelimit.Item{{Zone: wide, Key: "k"}, {Zone: narrow, Key: "k"}, {Zone: logz, Key: "k"}}
			out := make([]ratelimit.Decision, 3)
			for i := 0; i < 5; i++ {
				allowed, err := store.Take(context.Background(), epoch, items, out)
				if err != nil {
					t.Fatal(err)
				}
				if allowed != (i < 2) {
					t.Fatalf("request %d: allowed %v", i, allowed)
				}
			}
			// Two requests counted: an allowing item reports N-2-cost.
			if out[0].Remaining != 7 || out[2].Remaining != 2 {
				t.Fatalf("denied requests were counted: wide remaining %d (want 7), log remaining %d (want 2)", out[0].Remaining, out[2].Remaining)
			}
			if ratelimit.Tightest(out) != 1 {
				t.Fatalf("tightest is %d, want the narrow zone", ratelimit.Tightest(out))
			}
		})
	}
}

// TestRedisNoScript: after SCRIPT FLUSH the store sends the script again,
// once, and the request succeeds.
func TestRedisNoScript(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			addr := be.start(t)
			_, client := newStore(t, addr)
			runner := &countingRunner{ScriptRunner: client}
			store, err := New(runner, Settings{})
			if err != nil {
				t.Fatal(err)
			}
			z := newZone(t, "ns", ratelimit.Rule{Window: time.Minute, Limit: 10})
			take1(t, store, epoch, z, "k") // loads the script
			if _, err := client.Do(context.Background(), "SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
			before := atomic.LoadInt64(&runner.eval)
			if d := take1(t, store, epoch, z, "k"); !d.Allowed || d.Remaining != 8 {
				t.Fatalf("after SCRIPT FLUSH: %+v", d)
			}
			take1(t, store, epoch, z, "k")
			if n := atomic.LoadInt64(&runner.eval) - before; n != 1 {
				t.Fatalf("EVAL sent %d times after the flush, want 1", n)
			}
		})
	}
}

// TestRedisNoScriptPrepared: a prepared call (the Traefik plugin's and
// Caddy's request of one zone, with an in-flight slot or without) that
// finds the script gone is decided by one EVAL of its text, not by its
// SHA1 sent a second time first. Redis counts the calls.
func TestRedisNoScriptPrepared(t *testing.T) {
	srv := redistest.Start(t)
	store, client := newStore(t, srv.Addr())
	ctx := context.Background()
	z := newZone(t, "nsp", ratelimit.Rule{Window: time.Minute, Limit: 10})
	for _, tc := range []struct {
		name string
		take func() ratelimit.Decision
	}{
		{"take", func() ratelimit.Decision {
			out := make([]ratelimit.Decision, 1)
			if _, err := store.Take(ctx, time.Now(), []ratelimit.Item{{Zone: z, Key: "k"}}, out); err != nil {
				t.Fatal(err)
			}
			return out[0]
		}},
		{"slot", func() ratelimit.Decision {
			out := make([]ratelimit.Decision, 1)
			slot := &ratelimit.Slot{Set: SlotsKey(store.prefix, "nsp", "s"), N: 100, TTL: time.Minute, Member: strconv.Itoa(rand.Int())}
			if _, err := store.TakeSlot(ctx, time.Now(), []ratelimit.Item{{Zone: z, Key: "s"}}, out, slot); err != nil {
				t.Fatal(err)
			}
			return out[0]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.take() // loads the script
			for _, c := range [][]string{{"SCRIPT", "FLUSH"}, {"CONFIG", "RESETSTAT"}} {
				if _, err := client.Do(ctx, c[0], c[1]); err != nil {
					t.Fatal(err)
				}
			}
			if d := tc.take(); !d.Allowed || d.Remaining != 8 {
				t.Fatalf("after SCRIPT FLUSH: %+v", d)
			}
			calls := redistest.Calls(t, srv.Addr())
			if calls["evalsha"] != 1 || calls["eval"] != 1 {
				t.Fatalf("after SCRIPT FLUSH: %d EVALSHA and %d EVAL, want 1 refused and 1 with the text", calls["evalsha"], calls["eval"])
			}
			if d := tc.take(); !d.Allowed || d.Remaining != 7 {
				t.Fatalf("the next request: %+v", d)
			}
			if calls := redistest.Calls(t, srv.Addr()); calls["evalsha"] != 2 || calls["eval"] != 1 {
				t.Fatalf("the next request: %d EVALSHA and %d EVAL in all, want 2 and 1", calls["evalsha"], calls["eval"])
			}
		})
	}
}

// TestRedisRuleChange: counters written under another rule (another
// sub-window, or another algorithm and so another Redis type) are
// dropped, never misread.
func TestRedisRuleChange(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			store, _ := newStore(t, be.start(t))
			store.callerTime = true
			first := newZone(t, "api", ratelimit.Rule{Window: time.Minute, SubWindow: time.Second, Limit: 3})
			for i := 0; i < 3; i++ {
				take1(t, store, epoch, first, "k")
			}
			for _, r := range []ratelimit.Rule{
				{Window: time.Minute, SubWindow: 10 * time.Second, Limit: 3},
				{Window: time.Minute, Limit: 3, Algorithm: ratelimit.Log},
				{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 3},
			} {
				z := newZone(t, "api", r)
				if d := take1(t, store, epoch, z, "k"); !d.Allowed || d.Remaining != 2 {
					t.Fatalf("%v after a rule change: %+v, want a fresh count", r.Algorithm, d)
				}
			}
		})
	}
}

// TestRedisKeyLayout checks the keys and TTLs the script leaves behind.
func TestRedisKeyLayout(t *testing.T) {
	s := redistest.Start(t)
	store, client := newStore(t, s.Addr())
	sliding := newZone(t, "api", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 5})
	logz := newZone(t, "login", ratelimit.Rule{Window: 30 * time.Second, Limit: 5, Algorithm: ratelimit.Log})
	long := strings.Repeat("x", MaxKeyPart+1)
	take1(t, store, time.Time{}, sliding, "203.0.113.7")
	take1(t, store, time.Time{}, logz, "alice")
	take1(t, store, time.Time{}, sliding, long)
	ctx := context.Background()
	for _, tc := range []struct {
		key, typ string
		maxTTL   time.Duration
	}{
		// The script adds a millisecond to every TTL (see redisScript).
		{"t:api:{203.0.113.7}", "string", 66*time.Second + time.Millisecond},
		{"t:login:{alice}", "zset", 30*time.Second + time.Millisecond},
		{Key("t:", "api", long), "string", 66*time.Second + time.Millisecond},
	} {
		typ, err := client.Do(ctx, "TYPE", tc.key)
		if err != nil || typ.Str != tc.typ {
			t.Fatalf("TYPE %s = %q, %v; want %s", tc.key, typ.Str, err, tc.typ)
		}
		ttl, err := client.Do(ctx, "PTTL", tc.key)
		if err != nil || ttl.Int <= 0 || time.Duration(ttl.Int)*time.Millisecond > tc.maxTTL {
			t.Fatalf("PTTL %s = %d, %v; want in (0, %v]", tc.key, ttl.Int, err, tc.maxTTL)
		}
	}
	if k := Key("t:", "api", long); len(k) != len("t:api:{#}")+64 {
		t.Fatalf("long key not hashed: %q", k)
	}
}

func TestRedisKey(t *testing.T) {
	for _, tc := range []struct{ prefix, zone, key, want string }{
		{"rl:", "api", "203.0.113.7", "rl:api:{203.0.113.7}"},
		{"", "z", "", "z:{}"},
		{"p:", "z", "a}b", "p:z:{a}b}"},
		{"p:", "z", "#x", "p:z:{#" + sha("#x") + "}"},
		{"p:", "z", strings.Repeat("é", 65), "p:z:{#" + sha(strings.Repeat("é", 65)) + "}"},
	} {
		if got := Key(tc.prefix, tc.zone, tc.key); got != tc.want {
			t.Errorf("Key(%q, %q, %q) = %q, want %q", tc.prefix, tc.zone, tc.key, got, tc.want)
		}
	}
	for key, tag := range map[string]string{"a:{b}": "b", "a:{}": "a:{}", "a{b}{c}": "b", "ab": "ab", "a{b": "a{b", "p:z:{a}b}": "a"} {
		if got := HashTag(key); got != tag {
			t.Errorf("HashTag(%q) = %q, want %q", key, got, tag)
		}
	}
}

func TestRedisConfigErrors(t *testing.T) {
	if _, err := New(nil, Settings{}); err == nil {
		t.Error("nil runner accepted")
	}
	if _, err := New(&countingRunner{}, Settings{KeyPrefix: "{x}"}); err == nil {
		t.Error("prefix with braces accepted")
	}
	for _, tc := range []struct {
		zone  string
		rule  ratelimit.Rule
		field ratelimit.Field
	}{
		{"a{b", ratelimit.Rule{Window: time.Second, SubWindow: time.Second}, ratelimit.FieldName},
		{"z", ratelimit.Rule{Window: time.Second + time.Nanosecond, SubWindow: time.Second + time.Nanosecond}, ratelimit.FieldWindow},
		{"z", ratelimit.Rule{Window: 10 * time.Microsecond, SubWindow: 2500 * time.Nanosecond}, ratelimit.FieldSubWindow},
	} {
		err := CheckRule(tc.zone, tc.rule)
		if fe, ok := err.(*ratelimit.FieldError); !ok || fe.Field != tc.field {
			t.Errorf("CheckRule(%q, %+v) = %#v, want a *FieldError of %v", tc.zone, tc.rule, err, tc.field)
		}
	}
}

// TestRedisExact: several limiter instances, each with its own client,
// hammer one key from many goroutines; exactly N are admitted. The window
// is an hour so that no boundary passes during the test. -v prints the
// figures of README.md.
func TestRedisExact(t *testing.T) {
	s := redistest.Start(t)
	const limit, instances, workers, perWorker = 300, 3, 8, 40
	rule := ratelimit.Rule{Window: time.Hour, SubWindow: 6 * time.Minute, Limit: limit}
	for _, alg := range []ratelimit.Algorithm{ratelimit.Sliding, ratelimit.Log} {
		rule.Algorithm = alg
		if alg == ratelimit.Log {
			rule.SubWindow = 0
		}
		var admitted int64
		var wg sync.WaitGroup
		for i := 0; i < instances; i++ {
			// Instance 0 shares one auto-pipelined connection.
			c := newClient(t, resp.Options{Addrs: []string{s.Addr()}, ReadTimeout: 2 * time.Second, AutoPipeline: i == 0})
			store, err := New(c, Settings{})
			if err != nil {
				t.Fatal(err)
			}
			z := newZone(t, "exact-"+alg.String(), rule)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out := make([]ratelimit.Decision, 1)
					items := []ratelimit.Item{{Zone: z, Key: "hot"}}
					for j := 0; j < perWorker; j++ {
						allowed, err := store.Take(context.Background(), time.Time{}, items, out)
						if err != nil {
							t.Error(err)
							return
						}
						if allowed {
							atomic.AddInt64(&admitted, 1)
						}
					}
				}()
			}
		}
		wg.Wait()
		t.Logf("%v: %d instances, %d goroutines, %d attempts on one key: %d admitted, limit %d",
			alg, instances, instances*workers, instances*workers*perWorker, admitted, limit)
		if admitted != limit {
			t.Errorf("%v: %d admitted of %d attempts, want exactly %d", alg, admitted, instances*workers*perWorker, limit)
		}
	}
}

// TestRedisClusterSplit: in Cluster mode a request whose keys differ is
// decided key by key, stopping at the first denial.
func TestRedisClusterSplit(t *testing.T) {
	m := miniredis.RunT(t)
	_, client := newStore(t, m.Addr())
	runner := &countingRunner{ScriptRunner: client}
	store, err := New(runner, Settings{Cluster: true})
	if err != nil {
		t.Fatal(err)
	}
	a := newZone(t, "a", ratelimit.Rule{Window: time.Minute, Limit: 1})
	b := newZone(t, "b", ratelimit.Rule{Window: time.Minute, Limit: 5})
	items := []ratelimit.Item{{Zone: a, Key: "ip"}, {Zone: b, Key: "user"}, {Zone: a, Key: "ip"}}
	out := make([]ratelimit.Decision, 3)
	if ok, err := store.Take(context.Background(), time.Time{}, items[:2], out); !ok || err != nil {
		t.Fatalf("first request: %v %v", ok, err)
	}
	if n := atomic.LoadInt64(&runner.evalSha) + atomic.LoadInt64(&runner.eval); n < 2 {
		t.Fatalf("%d calls for two keys in cluster mode, want 2", n)
	}
	if ok, _ := store.Take(context.Background(), time.Time{}, items[:2], out); ok || out[0].Allowed || !out[1].Allowed {
		t.Fatalf("second request: %v %+v", ok, out)
	}
	if out[1].Remaining != 0 {
		t.Fatalf("the item after the denial was consulted: %+v", out[1])
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestRedisTTL: a key lives exactly as long as its newest count matters,
// however many writes it had (miniredis, whose clock the test moves).
func TestRedisTTL(t *testing.T) {
	m := miniredis.RunT(t)
	store, _ := newStore(t, m.Addr())
	for _, tc := range []struct {
		rule     ratelimit.Rule
		lifetime time.Duration // from the first write, at the start of a sub-window + 300ms
	}{
		{ratelimit.Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 5}, 11*time.Second - 300*time.Millisecond},
		{ratelimit.Rule{Window: 10 * time.Second, Limit: 5, Algorithm: ratelimit.Fixed}, 10*time.Second - 300*time.Millisecond},
		{ratelimit.Rule{Window: 10 * time.Second, Limit: 5, Algorithm: ratelimit.Log}, 10*time.Second + 200*time.Millisecond},
	} {
		t.Run(tc.rule.Algorithm.String(), func(t *testing.T) {
			z := newZone(t, "ttl-"+tc.rule.Algorithm.String(), tc.rule)
			now := time.Unix(1_760_000_000, 300e6)
			m.SetTime(now)
			take1(t, store, time.Time{}, z, "k")
			// A second write 200ms later, in the same sub-window.
			m.SetTime(now.Add(200 * time.Millisecond))
			m.FastForward(200 * time.Millisecond)
			take1(t, store, time.Time{}, z, "k")
			key := Key("t:", z.Name(), "k")
			step := tc.lifetime - 200*time.Millisecond - time.Millisecond
			m.FastForward(step)
			if !m.Exists(key) {
				t.Fatalf("key gone %v after the first write, while it still counts", tc.lifetime-time.Millisecond)
			}
			m.FastForward(2 * time.Millisecond)
			if m.Exists(key) {
				t.Fatalf("key still there %v after the first write, when nothing counts", tc.lifetime+time.Millisecond)
			}
		})
	}
}
