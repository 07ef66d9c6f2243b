package redisstore

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// The differential replays one trace of requests through the in-memory
// zones (TakeAll) and through the Redis script on a real redis-server (one
// call per request, the script told the trace's time), and compares every
// decision. Times and rules are whole microseconds, the script's unit.

// diffZone is one rule of a trace; name is the zone's name. The items of
// a reserving zone are Refundable (count_status): each admission holds a
// ratelimit.Receipt that a later refund step may give back.
type diffZone struct {
	name    string
	rule    ratelimit.Rule // normalized
	reserve bool
	// ban, when positive, is the zone's ban (ratelimit.Options.Ban).
	ban time.Duration
}

func (z diffZone) String() string {
	r := z.rule
	s := fmt.Sprintf("%s: %v W=%dµs T=%dµs N=%d cost=%d", z.name, r.Algorithm,
		r.Window/time.Microsecond, r.SubWindow/time.Microsecond, r.Limit, r.Cost)
	if z.reserve {
		s += " reserving"
	}
	if z.ban > 0 {
		s += fmt.Sprintf(" ban=%dµs", z.ban/time.Microsecond)
	}
	return s
}

// diffItem is one rule of a request: zone index and key.
type diffItem struct {
	zone int
	key  string
}

// diffStep is one request at a time in microseconds since the Unix epoch,
// or, when items is nil, a refund: the response of the request at index
// refund of the trace settled with a status its zones do not count, and
// its Refundable items give their counts back (at the time of the request
// before this step, whatever it is: a refund names no time); or, when
// reset is set, a reset of its one item's key: an operator's DELETE, or a
// key Redis lost (the zone forgets it, and Redis deletes it), after which
// the key starts one fresh budget and no refund of a count reserved
// before reaches it.
type diffStep struct {
	at     int64
	items  []diffItem
	refund int
	reset  bool
}

// refundOf is the refund step of the request at index i of the trace.
func refundOf(i int) diffStep { return diffStep{refund: i} }

// resetOf is the reset step of key in zone.
func resetOf(zone int, key string) diffStep {
	return diffStep{items: []diffItem{{zone, key}}, reset: true}
}

func (s diffStep) isRefund() bool { return s.items == nil }

// isRequest reports whether s is a request: neither a refund nor a reset.
func (s diffStep) isRequest() bool { return s.items != nil && !s.reset }

// diffStats counts what the runs covered.
type diffStats struct {
	seeds, steps, items, multi, denied, deniedMulti, back int
	// rounded counts RetryAfters the zone gives to the nanosecond and the
	// script to the microsecond above (see diffCompare).
	rounded int
	// expired counts Redis keys the harness expired in trace time.
	expired int
	// reserved counts the Refundable items admitted (with a ratelimit.Receipt);
	// refunds the receipts given back, of which empty found nothing to
	// take back in Redis (its sub-window or entry gone, or the key), and
	// moved those whose sub-window was no longer the newest the request
	// before the refund was in (or, for Log, whose entry had left the
	// window).
	reserved, refunds, empty, moved int
	// resets counts the reset steps, and refused the refunds of counts
	// reserved before their key's reset.
	resets, refused int
	// banned counts the items of zones with a ban refused.
	banned int
}

func (s diffStats) String() string {
	return fmt.Sprintf("%d seeds, %d requests (%d multi-rule), %d items, %d denied requests (%d multi-rule), %d clock steps back, %d keys expired, %d RetryAfters rounded up to the µs by the script, %d reservations, %d refunds (%d after their sub-window moved on, %d found nothing), %d resets (%d refunds of a count reserved before its key's reset, all refused), %d items refused in zones with a ban",
		s.seeds, s.steps, s.multi, s.items, s.denied, s.deniedMulti, s.back, s.expired, s.rounded, s.reserved, s.refunds, s.moved, s.empty, s.resets, s.refused, s.banned)
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
var ttlScript = ttlOf(redisScript)

// ttlBanScript is redisFullScript so changed, for the calls with a ban or a slot.
var ttlBanScript = ttlOf(redisFullScript)

// ttlOf returns the script s with its expiries taken out (see ttlScript).
func ttlOf(s string) string {
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
}

var ttlScriptSHA, ttlBanScriptSHA = scriptSHA(ttlScript), scriptSHA(ttlBanScript)

// ttlRunner runs ttlScript in place of the limiter script and keeps the
// TTLs and the reply of the last call.
type ttlRunner struct {
	c     *resp.Client
	ttls  []int64
	reply []int64
}

func (r *ttlRunner) EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error) {
	script, scriptSHA := ttlScript, ttlScriptSHA
	switch sha {
	case redisScriptSHA:
	case redisFullScriptSHA:
		script, scriptSHA = ttlBanScript, ttlBanScriptSHA
	default:
		return nil, fmt.Errorf("unexpected script %s", sha)
	}
	res, err := r.c.EvalSha(ctx, scriptSHA, keys, args)
	if err != nil && isNoScript(err) {
		res, err = r.c.Eval(ctx, script, keys, args)
	}
	if err != nil {
		return nil, err
	}
	// The script's own reply: 4 integers per item taken, 6 per item
	// reserved, 7 per item leased, and one more if Redis could not count
	// the request; or one per item refunded. Then one TTL per key.
	// An item of a zone with a ban has one integer more, and its ban key
	// and argument follow the items' (see the script's BANS); the script
	// returns the TTLs of the items' keys only.
	bans := 2*len(keys) + 1 - len(args)
	if bans < 0 {
		bans = 0
	}
	n, want, refund := len(keys)-bans, bans, false
	for i := 0; i < n && 1+2*i < len(args); i++ {
		switch args[1+2*i] {
		case modeReserve:
			want += 6
		case modeLease:
			want += 7
		case modeRefund:
			want, refund = want+1, true
		default:
			want += 4
		}
	}
	if len(res) != want+n && (refund || len(res) != want+1+n || res[want] != redisNotCounted) {
		return nil, fmt.Errorf("ttl script: %d integers for %d keys", len(res), n)
	}
	own := len(res) - n
	r.ttls = append(r.ttls[:0], res[own:]...)
	r.reply = append(r.reply[:0], res[:own]...)
	return res[:own], nil
}

func (r *ttlRunner) Eval(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	return r.EvalSha(ctx, scriptSHA(script), keys, args)
}

// diffHarness is one redis-server and a store on it; every run gets a key
// prefix of its own, so runs never see each other's keys.
type diffHarness struct {
	client *resp.Client
	runner *ttlRunner
	store  *Store
	runs   int
}

func newDiffHarness(tb testing.TB) *diffHarness {
	tb.Helper()
	srv := redistest.Start(tb)
	client := newClient(tb, resp.Options{Addrs: []string{srv.Addr()}, ReadTimeout: 10 * time.Second})
	runner := &ttlRunner{c: client}
	store, err := New(runner, Settings{})
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
	zs     []*ratelimit.Zone
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
	// step is the index of the next step in the trace, now the time of
	// the last request.
	step int
	now  int64
	// held is, by its index in the trace, every request with Refundable
	// items not yet refunded.
	held map[int]*diffHeld
	// generations counts the resets of each key.
	generations map[diffItem]int
	// bans holds, in forward time, when each key's ban ends (µs), in the
	// exact reference.
	bans map[diffItem]int64

	items     []ratelimit.Item
	want, got []ratelimit.Decision
}

// diffHeld is a request whose response is still to come: what a refund
// gives back.
type diffHeld struct {
	step      diffStep
	items     []ratelimit.Item
	want, got []ratelimit.Decision
	allowed   bool
	// generations are the resets of each item's key before the request: a
	// refund after another reset finds nothing in the exact reference.
	generations []int
}

func (h *diffHarness) start(tb testing.TB, zones []diffZone, forward bool, stats *diffStats) *diffRun {
	tb.Helper()
	h.runs++
	r := &diffRun{h: h, zones: zones, prefix: "d" + strconv.Itoa(h.runs) + ":", forward: forward,
		expiry: make(map[string]int64), admitted: make(map[diffItem][]int64), held: make(map[int]*diffHeld), stats: stats,
		generations: make(map[diffItem]int), bans: make(map[diffItem]int64)}
	for _, dz := range zones {
		z, err := ratelimit.NewZone(dz.name, dz.rule, ratelimit.Options{SweepInterval: -1, MaxKeys: 1024, Ban: dz.ban})
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

// do runs one step through both stores and returns the memory's
// decisions (none for a refund), or the first disagreement.
func (r *diffRun) do(s diffStep) ([]ratelimit.Decision, *diffFailure) {
	r.step++
	if s.isRefund() {
		return nil, r.refund(s)
	}
	if s.reset {
		return nil, r.reset(s.items[0])
	}
	r.now = s.at
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
	r.items, r.want, r.got = r.items[:0], make([]ratelimit.Decision, n), make([]ratelimit.Decision, n)
	for _, it := range s.items {
		r.items = append(r.items, ratelimit.Item{Zone: r.zs[it.zone], Key: it.key, Refundable: r.zones[it.zone].reserve})
	}
	now := time.UnixMicro(s.at)
	allowed := ratelimit.TakeAll(now, r.items, r.want)
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
	for j, it := range s.items {
		if r.zones[it.zone].ban > 0 && !r.want[j].Allowed {
			r.stats.banned++
		}
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
	if f := r.checkReceipts(s, allowed); f != nil {
		return r.want, f
	}
	if r.forward {
		// The stores agree: both must still be exact, or a mistake they
		// share would go unseen.
		for j, it := range s.items {
			e := r.exact(it, s.at)
			if exactWrong(e, r.want[j], time.Nanosecond) != "" || exactWrong(e, r.got[j], time.Microsecond) != "" {
				return r.want, r.disagree(s, "inexact", j)
			}
		}
		for _, it := range s.items {
			if ban := r.zones[it.zone].ban; ban > 0 && r.bans[it] <= s.at && !exactTake(r.zones[it.zone].rule, r.admitted[it], s.at).allowed {
				r.bans[it] = s.at + int64(ban/time.Microsecond)
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

// exact is the exact decision on item it at t (µs): exactTake's, unless
// its zone has a ban, under which a key banned at t is refused until the
// ban ends, and a key its window refuses is banned from t.
func (r *diffRun) exact(it diffItem, t int64) exactDecision {
	e := exactTake(r.zones[it.zone].rule, r.admitted[it], t)
	ban := int64(r.zones[it.zone].ban / time.Microsecond)
	if ban <= 0 {
		return e
	}
	left := r.bans[it] - t
	if left <= 0 && e.allowed {
		return e
	}
	if left <= 0 {
		left = ban
	}
	return exactDecision{remaining: 0, retry: big.NewRat(left, 1), reset: left}
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
		e := r.exact(it, s.at)
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
		key := Key(r.prefix, r.zones[it.zone].name, it.key)
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
		// A ban's denial names the ban's end, which the ban key keeps.
		if !r.forward || r.want[j].ResetAfter <= 0 || (!allowed && r.want[j].Allowed) || r.zones[it.zone].ban > 0 && !r.want[j].Allowed {
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

// checkReceipts checks the receipts of request s: an admitted Refundable
// item holds one from each store, naming the same sub-window (the same
// time, for Log) and, in forward time, the request's own time; no other
// item holds one. It keeps a request with Refundable items for its
// refund.
func (r *diffRun) checkReceipts(s diffStep, allowed bool) *diffFailure {
	reserving := false
	for j, it := range r.items {
		if !it.Refundable {
			continue
		}
		reserving = true
		mem, red := r.want[j].Receipt, r.got[j].Receipt
		rule := r.zones[s.items[j].zone].rule
		span := int64(rule.SubWindow)
		bad := ""
		switch {
		case !allowed:
			if mem != (ratelimit.Receipt{}) || red != (ratelimit.Receipt{}) {
				bad = "a denied request holds one"
			}
		case mem.At == 0 || mem.Remote || red.At == 0 || !red.Remote:
			bad = "want one from each store"
		case rule.Algorithm == ratelimit.Log && mem.At != red.At:
			bad = "not the same time"
		case rule.Algorithm != ratelimit.Log && mem.At/span != red.At/span:
			bad = "not the same sub-window"
		case r.forward && red.At != s.at*int64(time.Microsecond): // the trace's times are µs
			bad = "not the request's time"
		}
		if bad != "" {
			return &diffFailure{kind: "ratelimit.Receipt", msg: r.describe(s, fmt.Sprintf("ratelimit.Receipt (%s: memory %+v, redis %+v)", bad, mem, red), j)}
		}
		if allowed {
			r.stats.reserved++
		}
	}
	for j, it := range r.items {
		if !it.Refundable && (r.want[j].Receipt != ratelimit.Receipt{} || r.got[j].Receipt != ratelimit.Receipt{}) {
			return &diffFailure{kind: "ratelimit.Receipt", msg: r.describe(s, "ratelimit.Receipt (an item not Refundable holds one)", j)}
		}
	}
	if reserving {
		generations := make([]int, len(s.items))
		for j, it := range s.items {
			generations[j] = r.generations[it]
		}
		r.held[r.step-1] = &diffHeld{step: s, items: append([]ratelimit.Item(nil), r.items...),
			want: append([]ratelimit.Decision(nil), r.want...), got: append([]ratelimit.Decision(nil), r.got...), allowed: allowed, generations: generations}
	}
	return nil
}

// reset resets key it in both stores, as an operator's DELETE does (the
// Caddy admin API: the zone forgets the key, the Redis store deletes it),
// and as Redis losing the key does to the Redis store. The exact
// reference starts the key afresh, in a new generation.
func (r *diffRun) reset(it diffItem) *diffFailure {
	z := r.zs[it.zone]
	z.Forget(it.key)
	key := Key(r.prefix, z.Name(), it.key)
	if _, err := r.h.client.Do(context.Background(), "DEL", key); err != nil {
		return &diffFailure{kind: "error", msg: "DEL: " + err.Error()}
	}
	delete(r.expiry, key)
	if _, err := r.h.client.Do(context.Background(), "DEL", key+banSuffix); err != nil {
		return &diffFailure{kind: "error", msg: "DEL: " + err.Error()}
	}
	delete(r.bans, it)
	r.admitted[it] = nil
	r.generations[it]++
	r.stats.resets++
	return nil
}

// refund gives back, in both stores, the reservations of the request the
// refund step s names, each at most once. In forward time the exact
// reference gives back one admission of the ratelimit.Receipt's sub-window (of the
// ratelimit.Receipt's time, for Log) if it holds one, and Redis must have found the
// count exactly when the reference held it, unless the sub-window (the
// entry) no longer counts, where a store may still hold it or not: no
// decision from now on reads it.
func (r *diffRun) refund(s diffStep) *diffFailure {
	held := r.held[s.refund]
	if held == nil {
		return nil // a request with nothing Refundable, or refunded
	}
	delete(r.held, s.refund)
	ratelimit.Memory{}.Refund(context.Background(), held.items, held.want)
	r.h.store.prefix = r.prefix
	r.h.runner.reply = r.h.runner.reply[:0]
	if err := r.h.store.Refund(context.Background(), held.items, held.got); err != nil {
		return &diffFailure{kind: "error", msg: fmt.Sprintf("refund of request %d: redis: %v", s.refund, err)}
	}
	reply, p := r.h.runner.reply, 0
	for j, it := range held.items {
		if !it.Refundable || held.got[j].Receipt.At == 0 {
			continue
		}
		if p == len(reply) {
			return r.refundFailure(s, held, "error", fmt.Sprintf("the script answered %d integers", len(reply)), j)
		}
		found := reply[p] == 1
		p++
		r.stats.refunds++
		if !found {
			r.stats.empty++
		}
		di := held.step.items[j]
		if held.generations[j] != r.generations[di] {
			if found {
				return r.refundFailure(s, held, "refund (redis gave a count reserved before a reset back to the key's new generation)", "", j)
			}
			r.stats.refused++
		}
		rule := r.zones[di.zone].rule
		// The trace's times are µs; a receipt's, nanoseconds.
		at, span, window := held.got[j].Receipt.At/int64(time.Microsecond), int64(rule.SubWindow/time.Microsecond), int64(rule.Window/time.Microsecond)
		log := rule.Algorithm == ratelimit.Log
		if log && at <= r.now-window || !log && at/span < r.now/span {
			r.stats.moved++
		}
		if !r.forward {
			continue
		}
		adm, i := r.admitted[di], len(r.admitted[di])-1
		if held.generations[j] != r.generations[di] {
			i = -1 // reserved before a reset: the reference holds nothing of it
		}
		for ; i >= 0; i-- {
			if log && adm[i] == at || !log && adm[i]/span == at/span {
				break
			}
		}
		counts := at > r.now-window // Log
		switch rule.Algorithm {
		case ratelimit.Fixed:
			counts = at/span == r.now/span
		case ratelimit.Sliding, ratelimit.Strict:
			counts = at/span >= r.now/span-int64(rule.Window/rule.SubWindow)
		}
		switch {
		case found && i < 0:
			return r.refundFailure(s, held, "refund (redis gave back a count the exact reference does not hold)", "", j)
		case !found && i >= 0 && counts:
			return r.refundFailure(s, held, "refund (redis kept a count that still counts, the exact reference gave it back)", "", j)
		}
		if i >= 0 {
			r.admitted[di] = append(adm[:i], adm[i+1:]...)
		}
	}
	if p != len(reply) {
		return r.refundFailure(s, held, "error", fmt.Sprintf("the script answered %d integers for %d refunds", len(reply), p), 0)
	}
	return nil
}

func (r *diffRun) refundFailure(s diffStep, held *diffHeld, kind, detail string, item int) *diffFailure {
	var b strings.Builder
	fmt.Fprintf(&b, "%s at the refund of request %d (at %dµs) after the request at %dµs, item %d", kind, s.refund, held.step.at, r.now, item)
	if detail != "" {
		b.WriteString(": " + detail)
	}
	fmt.Fprintf(&b, "\n  the script's reply %v", r.h.runner.reply)
	for j, it := range held.step.items {
		fmt.Fprintf(&b, "\n  item %d %s key %q\n    memory %+v\n    redis  %+v", j, r.zones[it.zone], it.key, held.want[j], held.got[j])
		if r.forward {
			fmt.Fprintf(&b, "\n    exact reference holds %v", r.admitted[it])
		}
	}
	return &diffFailure{kind: kind, msg: b.String()}
}

// diffCompare returns what differs between the zone's decision want and
// the script's got ("" for nothing). The zone computes a RetryAfter inside
// a sliding sub-window to the nanosecond, the script to the microsecond:
// the script's is then the zone's rounded up, the first whole microsecond
// at which the request fits, and rounded reports it.
func diffCompare(want, got ratelimit.Decision) (kind string, rounded bool) {
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

// shrink returns a shorter trace that still disagrees, its zones and its
// failure: greedy removal of chunks of steps (with the refunds of the
// requests removed), then of items of multi-rule requests, then of
// reserving zones' reservations, within a bounded number of replays.
func (h *diffHarness) shrink(tb testing.TB, zones []diffZone, steps []diffStep, forward bool, f *diffFailure) ([]diffZone, []diffStep, *diffFailure) {
	steps = steps[:f.step+1]
	budget := 400
	try := func(cz []diffZone, cand []diffStep) bool {
		if budget == 0 {
			return false
		}
		budget--
		if g := h.replay(tb, cz, cand, forward); g != nil {
			zones, steps, f = cz, cand[:g.step+1], g
			return true
		}
		return false
	}
	for chunk := len(steps) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i+chunk <= len(steps); {
			from, to := i, i+chunk
			if !try(zones, keepSteps(steps, func(j int) bool { return j < from || j >= to })) {
				i += chunk
			}
		}
	}
	for i := 0; i < len(steps); i++ {
		for j := 0; i < len(steps) && len(steps[i].items) > 1 && j < len(steps[i].items); {
			cand := append([]diffStep(nil), steps...)
			items := append([]diffItem(nil), steps[i].items[:j]...)
			cand[i].items = append(items, steps[i].items[j+1:]...)
			if !try(zones, cand) {
				j++
			}
		}
	}
	for i := range zones {
		if zones[i].reserve {
			cz := append([]diffZone(nil), zones...)
			cz[i].reserve = false
			try(cz, steps)
		}
	}
	return zones, steps, f
}

// keepSteps returns the steps that keep reports true for, less the
// refunds of the requests it drops, with the refunds renumbered.
func keepSteps(steps []diffStep, keep func(int) bool) []diffStep {
	at := make([]int, len(steps)) // index in the result, or -1
	var out []diffStep
	for i, s := range steps {
		at[i] = -1
		if !keep(i) || s.isRefund() && (s.refund >= i || at[s.refund] < 0) {
			continue
		}
		if s.isRefund() {
			s.refund = at[s.refund]
		}
		at[i] = len(out)
		out = append(out, s)
	}
	return out
}

// formatTrace prints zones and steps as Go literals, to paste into a
// regression test that calls diffHarness.replay.
func formatTrace(zones []diffZone, steps []diffStep) string {
	var b strings.Builder
	b.WriteString("zones := []diffZone{\n")
	for _, z := range zones {
		r := z.rule
		fmt.Fprintf(&b, "\t{%q, Rule{Window: %d * time.Microsecond, SubWindow: %d * time.Microsecond, Limit: %d, Algorithm: %d, Cost: %d}, %v, %d * time.Microsecond}, // %v\n",
			z.name, r.Window/time.Microsecond, r.SubWindow/time.Microsecond, r.Limit, r.Algorithm, r.Cost, z.reserve, z.ban/time.Microsecond, r.Algorithm)
	}
	b.WriteString("}\nsteps := []diffStep{\n")
	last := int64(0)
	for i, s := range steps {
		if s.isRefund() {
			fmt.Fprintf(&b, "\trefundOf(%d), // step %d\n", s.refund, i)
			continue
		}
		if s.reset {
			fmt.Fprintf(&b, "\tresetOf(%d, %q), // step %d\n", s.items[0].zone, s.items[0].key, i)
			continue
		}
		if len(s.items) == 1 {
			fmt.Fprintf(&b, "\tone(%d, %d, %q),", s.at, s.items[0].zone, s.items[0].key)
		} else {
			fmt.Fprintf(&b, "\tmulti(%d, []diffItem{", s.at)
			for j, it := range s.items {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "{%d, %q}", it.zone, it.key)
			}
			b.WriteString("}),")
		}
		fmt.Fprintf(&b, " // step %d", i)
		if last != 0 {
			fmt.Fprintf(&b, ", %+dµs", s.at-last)
		}
		last = s.at
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.String()
}
