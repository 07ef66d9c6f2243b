package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// The differential replays one trace of requests through the in-memory
// zones (TakeAll) and through the Redis script on a real redis-server (one
// call per request, the script told the trace's time), and compares every
// decision. Times and rules are whole microseconds, the script's unit.

// diffZone is one rule of a trace; name is the zone's name.
type diffZone struct {
	name string
	rule Rule // normalized
}

func (z diffZone) String() string {
	r := z.rule
	return fmt.Sprintf("%s: %v W=%dµs T=%dµs N=%d cost=%d", z.name, r.Algorithm,
		r.Window/time.Microsecond, r.SubWindow/time.Microsecond, r.Limit, r.Cost)
}

// diffItem is one rule of a request: zone index and key.
type diffItem struct {
	zone int
	key  string
}

// diffStep is one request at a time in microseconds since the Unix epoch.
type diffStep struct {
	at    int64
	items []diffItem
}

// diffStats counts what the runs covered.
type diffStats struct {
	seeds, steps, items, multi, denied, deniedMulti, back int
	// rounded counts RetryAfters the zone gives to the nanosecond and the
	// script to the microsecond above (see diffCompare).
	rounded int
	// expired counts Redis keys the harness expired in trace time.
	expired int
}

func (s diffStats) String() string {
	return fmt.Sprintf("%d seeds, %d requests (%d multi-rule), %d items, %d denied requests (%d multi-rule), %d clock steps back, %d keys expired, %d RetryAfters rounded up to the µs by the script",
		s.seeds, s.steps, s.multi, s.items, s.denied, s.deniedMulti, s.back, s.expired, s.rounded)
}

// diffFailure is the first disagreement of a run.
type diffFailure struct {
	step int
	kind string // allowed, limit, remaining, retry, reset, ttl, error
	msg  string
}

// ttlScript is redisScript with its expiries taken out: a local redis
// table in front of Redis's records the TTL of each PEXPIRE and SET ... PX
// instead of sending it, and the script returns, after its own reply, the
// TTL it set on each key in this call, in milliseconds (-1 when it set
// none). Redis would expire keys on its own clock, which has nothing to
// do with the trace's; the harness expires them itself at the trace time
// the script asked for, so that a TTL too short shows up as a wrong
// decision, and checks every TTL against the time the zone still counts
// the key. Nothing else changes: the decisions are the script's own.
var ttlScript = func() string {
	s := redisScript
	if strings.Count(s, "'PX', ") == 0 || strings.Count(s, "\nreturn out\n") != 1 {
		panic("redisScript changed: update ttlScript")
	}
	s = strings.Replace(s, "\nreturn out\n", `
for i = 1, #KEYS do out[#out + 1] = testTTL[KEYS[i]] or -1 end
return out
`, 1)
	return `local testTTL = {}
local function testPexpire(key, ms)
  if type(ms) ~= 'number' or ms < 1 or ms ~= math.floor(ms) then
    error('PEXPIRE ' .. key .. ' ' .. tostring(ms) .. ': not a positive whole number of milliseconds')
  end
  testTTL[key] = ms
end
-- untimed runs cmd on Redis through send (redis.call or redis.pcall)
-- without its expiry, which it records.
local function untimed(send, ...)
  local cmd, key, a, b, c = ...
  if cmd == 'PEXPIRE' then
    testPexpire(key, a)
    return 1
  end
  if cmd == 'SET' and b == 'PX' then
    testPexpire(key, c)
    return send(cmd, key, a)
  end
  return send(...)
end
local realRedis = redis
local redis = {
  call = function(...) return untimed(realRedis.call, ...) end,
  pcall = function(...) return untimed(realRedis.pcall, ...) end,
}
` + s
}()

var ttlScriptSHA = scriptSHA(ttlScript)

// ttlRunner runs ttlScript in place of the limiter script and keeps the
// TTLs of the last call.
type ttlRunner struct {
	c    *resp.Client
	ttls []int64
}

func (r *ttlRunner) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	if sha != redisScriptSHA {
		return nil, fmt.Errorf("unexpected script %s", sha)
	}
	res, err := r.c.EvalSha(ctx, ttlScriptSHA, keys, args)
	if err != nil && isNoScript(err) {
		res, err = r.c.Eval(ctx, ttlScript, keys, args)
	}
	if err != nil {
		return nil, err
	}
	n := len(keys)
	if len(res) != 5*n {
		return nil, fmt.Errorf("ttl script: %d integers for %d keys", len(res), n)
	}
	r.ttls = append(r.ttls[:0], res[4*n:]...)
	return res[:4*n], nil
}

func (r *ttlRunner) Eval(ctx context.Context, _ string, keys, args []string) ([]int64, error) {
	return r.EvalSha(ctx, redisScriptSHA, keys, args)
}

// diffHarness is one redis-server and a store on it; every run gets a key
// prefix of its own, so runs never see each other's keys.
type diffHarness struct {
	client *resp.Client
	runner *ttlRunner
	store  *RedisStore
	runs   int
}

func newDiffHarness(tb testing.TB) *diffHarness {
	tb.Helper()
	srv := redistest.Start(tb)
	client := newClient(tb, resp.Options{Addrs: []string{srv.Addr()}, ReadTimeout: 10 * time.Second})
	runner := &ttlRunner{c: client}
	store, err := NewRedisStore(runner, RedisOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	store.callerTime = true
	return &diffHarness{client: client, runner: runner, store: store}
}

// diffRun is one trace in progress: fresh zones and fresh Redis keys.
type diffRun struct {
	h      *diffHarness
	zones  []diffZone
	zs     []*Zone
	prefix string
	// forward is set when time never goes back. The harness then deletes
	// a Redis key once the trace's time reaches the TTL the script set
	// (Redis cannot undelete a key when a clock steps back), and a
	// disagreement is checked against the exact decision.
	forward bool
	// admitted holds the admission times of every key, for exactTake.
	admitted map[diffItem][]int64
	// expiry is, per Redis key written, the trace time in µs from which
	// Redis may have forgotten it.
	expiry map[string]int64
	stats  *diffStats

	items     []Item
	want, got []Decision
}

func (h *diffHarness) start(tb testing.TB, zones []diffZone, forward bool, stats *diffStats) *diffRun {
	tb.Helper()
	h.runs++
	r := &diffRun{h: h, zones: zones, prefix: "d" + strconv.Itoa(h.runs) + ":", forward: forward,
		expiry: make(map[string]int64), admitted: make(map[diffItem][]int64), stats: stats}
	for _, dz := range zones {
		z, err := NewZone(dz.name, dz.rule, Options{SweepInterval: -1, MaxKeys: 1024})
		if err != nil {
			tb.Fatalf("%v: %v", dz, err)
		}
		r.zs = append(r.zs, z)
	}
	return r
}

func (r *diffRun) close() {
	for _, z := range r.zs {
		z.Close()
	}
}

// do runs one request through both stores and returns the memory's
// decisions, or the first disagreement.
func (r *diffRun) do(s diffStep) ([]Decision, *diffFailure) {
	ctx := context.Background()
	if r.forward {
		for key, at := range r.expiry {
			if at <= s.at {
				if _, err := r.h.client.Do(ctx, "DEL", key); err != nil {
					return nil, &diffFailure{kind: "error", msg: "DEL: " + err.Error()}
				}
				delete(r.expiry, key)
				r.stats.expired++
			}
		}
	}
	n := len(s.items)
	r.items, r.want, r.got = r.items[:0], make([]Decision, n), make([]Decision, n)
	for _, it := range s.items {
		r.items = append(r.items, Item{Zone: r.zs[it.zone], Key: it.key})
	}
	now := time.UnixMicro(s.at)
	allowed := TakeAll(now, r.items, r.want)
	r.h.store.prefix = r.prefix
	gotAllowed, err := r.h.store.Take(ctx, now, r.items, r.got)
	if err != nil {
		return r.want, &diffFailure{kind: "error", msg: "redis: " + err.Error()}
	}
	r.stats.steps++
	r.stats.items += n
	if n > 1 {
		r.stats.multi++
	}
	if !allowed {
		r.stats.denied++
		if n > 1 {
			r.stats.deniedMulti++
		}
	}
	for j := range s.items {
		kind, rounded := diffCompare(r.want[j], r.got[j])
		if rounded {
			r.stats.rounded++
		}
		if kind != "" {
			return r.want, r.disagree(s, kind, j)
		}
	}
	if allowed != gotAllowed {
		return r.want, r.disagree(s, "allowed (request)", 0)
	}
	if f := r.checkTTL(s, allowed); f != nil {
		return r.want, f
	}
	if r.forward {
		// The stores agree: both must still be exact, or a mistake they
		// share would go unseen.
		for j, it := range s.items {
			e := exactTake(r.zones[it.zone].rule, r.admitted[it], s.at)
			if exactWrong(e, r.want[j], time.Nanosecond) != "" || exactWrong(e, r.got[j], time.Microsecond) != "" {
				return r.want, r.disagree(s, "inexact", j)
			}
		}
	}
	if allowed && r.forward {
		for _, it := range s.items {
			r.admitted[it] = append(forget(r.zones[it.zone].rule, r.admitted[it], s.at), s.at)
		}
	}
	return r.want, nil
}

// disagree describes a disagreement on item j and, in forward time, names
// the store that is wrong against the exact decision.
func (r *diffRun) disagree(s diffStep, kind string, j int) *diffFailure {
	msg := r.describe(s, kind, j)
	if !r.forward {
		return &diffFailure{kind: kind, msg: msg}
	}
	var memWrong, redisWrong bool
	for i, it := range s.items {
		e := exactTake(r.zones[it.zone].rule, r.admitted[it], s.at)
		mem := exactWrong(e, r.want[i], time.Nanosecond)
		red := exactWrong(e, r.got[i], time.Microsecond)
		msg += fmt.Sprintf("\n  item %d exact %v", i, e)
		if mem != "" {
			memWrong = true
			msg += "\n    memory wrong: " + mem
		}
		if red != "" {
			redisWrong = true
			msg += "\n    redis wrong: " + red
		}
	}
	switch {
	case memWrong && redisWrong:
		kind += " (both wrong)"
	case memWrong:
		kind += " (memory wrong)"
	case redisWrong:
		kind += " (redis wrong)"
	default:
		kind += " (both exact)"
	}
	return &diffFailure{kind: kind, msg: msg}
}

// checkTTL records the TTLs the script set and checks that Redis keeps
// every key at least as long as the zone still counts it.
func (r *diffRun) checkTTL(s diffStep, allowed bool) *diffFailure {
	for j, it := range s.items {
		key := RedisKey(r.prefix, r.zones[it.zone].name, it.key)
		if allowed {
			ttl := r.h.runner.ttls[j]
			if ttl >= 0 {
				if ttl*1000 < int64(r.want[j].ResetAfter/time.Microsecond) {
					return &diffFailure{kind: "ttl", msg: r.describe(s,
						fmt.Sprintf("ttl: the script set PEXPIRE %dms, the zone counts the key for %v", ttl, r.want[j].ResetAfter), j)}
				}
				r.expiry[key] = s.at + ttl*1000
			}
			if _, ok := r.expiry[key]; !ok {
				return &diffFailure{kind: "ttl", msg: r.describe(s, "ttl: a key written with no TTL", j)}
			}
		}
		// The zone counts the key for ResetAfter after an admission, and
		// after a denial of this item; an item that allowed a request
		// another item denied reports what an admission would have left.
		if !r.forward || r.want[j].ResetAfter <= 0 || (!allowed && r.want[j].Allowed) {
			continue
		}
		until := s.at + ceilMicros(r.want[j].ResetAfter)
		if at, ok := r.expiry[key]; !ok || at < until {
			return &diffFailure{kind: "ttl", msg: r.describe(s,
				fmt.Sprintf("ttl: redis may forget the key at +%dµs, the zone counts it until +%dµs", at-s.at, until-s.at), j)}
		}
	}
	return nil
}

// diffCompare returns what differs between the zone's decision want and
// the script's got ("" for nothing). The zone computes a RetryAfter inside
// a sliding sub-window to the nanosecond, the script to the microsecond:
// the script's is then the zone's rounded up, the first whole microsecond
// at which the request fits, and rounded reports it.
func diffCompare(want, got Decision) (kind string, rounded bool) {
	switch {
	case want.Allowed != got.Allowed:
		return "allowed", false
	case want.Limit != got.Limit:
		return "limit", false
	case want.Remaining != got.Remaining:
		return "remaining", false
	case want.ResetAfter != got.ResetAfter:
		return "reset", false
	case want.RetryAfter == got.RetryAfter:
		return "", false
	case want.RetryAfter%time.Microsecond != 0 && got.RetryAfter == time.Duration(ceilMicros(want.RetryAfter))*time.Microsecond:
		return "", true
	}
	return "retry", false
}

// ceilMicros returns d in microseconds, rounded up.
func ceilMicros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond > 0 {
		us++
	}
	return us
}

func (r *diffRun) describe(s diffStep, what string, item int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s differs at %dµs, item %d", what, s.at, item)
	for j, it := range s.items {
		fmt.Fprintf(&b, "\n  item %d %s key %q\n    memory %+v\n    redis  %+v", j, r.zones[it.zone], it.key, r.want[j], r.got[j])
	}
	return b.String()
}

// replay runs steps on fresh zones and keys and returns the first
// disagreement, or nil.
func (h *diffHarness) replay(tb testing.TB, zones []diffZone, steps []diffStep, forward bool) *diffFailure {
	var stats diffStats
	r := h.start(tb, zones, forward, &stats)
	defer r.close()
	for i, s := range steps {
		if _, f := r.do(s); f != nil {
			f.step = i
			return f
		}
	}
	return nil
}

// shrink returns a shorter trace that still disagrees, and its failure:
// greedy removal of chunks of steps, then of items of multi-rule steps,
// within a bounded number of replays.
func (h *diffHarness) shrink(tb testing.TB, zones []diffZone, steps []diffStep, forward bool, f *diffFailure) ([]diffStep, *diffFailure) {
	steps = steps[:f.step+1]
	budget := 400
	try := func(cand []diffStep) bool {
		if budget == 0 {
			return false
		}
		budget--
		if g := h.replay(tb, zones, cand, forward); g != nil {
			steps, f = cand[:g.step+1], g
			return true
		}
		return false
	}
	for chunk := len(steps) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i+chunk <= len(steps); {
			cand := append(append([]diffStep(nil), steps[:i]...), steps[i+chunk:]...)
			if !try(cand) {
				i += chunk
			}
		}
	}
	for i := 0; i < len(steps); i++ {
		for j := 0; i < len(steps) && len(steps[i].items) > 1 && j < len(steps[i].items); {
			cand := append([]diffStep(nil), steps...)
			items := append([]diffItem(nil), steps[i].items[:j]...)
			cand[i].items = append(items, steps[i].items[j+1:]...)
			if !try(cand) {
				j++
			}
		}
	}
	return steps, f
}

// formatTrace prints zones and steps as Go literals, to paste into a
// regression test that calls diffHarness.replay.
func formatTrace(zones []diffZone, steps []diffStep) string {
	var b strings.Builder
	b.WriteString("zones := []diffZone{\n")
	for _, z := range zones {
		r := z.rule
		fmt.Fprintf(&b, "\t{%q, Rule{Window: %d * time.Microsecond, SubWindow: %d * time.Microsecond, Limit: %d, Algorithm: %d, Cost: %d}}, // %v\n",
			z.name, r.Window/time.Microsecond, r.SubWindow/time.Microsecond, r.Limit, r.Algorithm, r.Cost, r.Algorithm)
	}
	b.WriteString("}\nsteps := []diffStep{\n")
	for i, s := range steps {
		fmt.Fprintf(&b, "\t{%d, []diffItem{", s.at)
		for j, it := range s.items {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{%d, %q}", it.zone, it.key)
		}
		b.WriteString("}},")
		if i > 0 {
			fmt.Fprintf(&b, " // %+dµs", s.at-steps[i-1].at)
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.String()
}
