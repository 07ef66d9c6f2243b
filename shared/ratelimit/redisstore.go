package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ScriptRunner runs a Lua script on Redis. The Caddy module implements it
// over go-redis, the Traefik plugin over shared/resp, so both run the same
// script. A reply that is not an array of integers is an error.
type ScriptRunner interface {
	// EvalSha runs the script cached on the server under its SHA1 hex. A
	// server that does not know the script answers an error whose text
	// starts with NOSCRIPT.
	EvalSha(ctx context.Context, sha string, keys, args []string) ([]int64, error)
	// Eval sends the script text, which the server runs and caches.
	Eval(ctx context.Context, script string, keys, args []string) ([]int64, error)
}

// ErrOutOfMemory is the error RedisStore.Take wraps when Redis would admit
// the request but cannot count it: it is over its maxmemory, so the script
// wrote nothing. out then holds Redis's decisions. Guard decides such a
// request by its failure policy without tripping the breaker, and keeps
// every denial Redis computes.
var ErrOutOfMemory = errors.New("redis is out of memory (maxmemory reached): requests it would admit cannot be counted; raise maxmemory or see the sizing guide")

// redisNotCounted is the integer the script appends to its reply when
// Redis would admit the request but refused to count it for lack of
// memory.
const redisNotCounted = 1

// preparedRunner is a ScriptRunner that encodes a call's arguments once
// for many keys: shared/resp's Client. Through one, RedisStore decides a
// request of one item, the Traefik plugin's every request, with
// arguments encoded once per zone (takeOne).
type preparedRunner interface {
	// PrepareEvalSha encodes an EVALSHA of sha on one key with args, in
	// the parts before and after the key.
	PrepareEvalSha(sha string, args []string) (head, tail string)
	// EvalShaPrepared runs the EVALSHA that head and tail enclose on key.
	EvalShaPrepared(ctx context.Context, head, key, tail string) ([]int64, error)
}

// RedisOptions configure a RedisStore.
type RedisOptions struct {
	// KeyPrefix is prepended to every key the store writes (see RedisKey).
	KeyPrefix string
	// Cluster tells the store that keys in different hash slots cannot be
	// used in one call. A request whose items have different keys is then
	// decided one key at a time, stopping at the first denial: the items
	// of a key already admitted stay counted.
	Cluster bool
	// CallerTime makes the script count at the time passed to Take rather
	// than at the server's TIME: for tests and simulations on a simulated
	// clock only. In production, instances with skewed clocks would
	// disagree.
	CallerTime bool
}

// RedisStore is a Store that keeps the counters in Redis, so that every
// instance sharing the Redis enforces one limit exactly. One request is one
// script call (per distinct key in Cluster mode), timed by the server's
// clock. It reports Redis failures; Guard applies the failure policy.
type RedisStore struct {
	run  ScriptRunner
	prep preparedRunner // run, when it is one
	// evalPrepared is prep's EvalShaPrepared as a func: under yaegi a
	// call through a func value costs about half one through an
	// interface (scripts/yaegitest, BenchmarkInterpretedCosts).
	evalPrepared func(ctx context.Context, head, key, tail string) ([]int64, error)
	prefix       string
	cluster      bool
	// args caches the six script arguments of each zone, by zone name and
	// rule rather than by *Zone, so a replaced zone is not kept alive: a
	// *sync.Map of zoneRule to []string, replaced when it holds
	// maxCachedRules (reloads with ever new rules cannot grow it).
	args     atomic.Value
	argsSize int64
	// callerTime is RedisOptions.CallerTime.
	callerTime bool
}

// NewRedisStore returns a store that runs the limiter script through run.
func NewRedisStore(run ScriptRunner, opts RedisOptions) (*RedisStore, error) {
	if run == nil {
		return nil, errors.New("redis store: no script runner")
	}
	if err := checkKeyPrefix(opts.KeyPrefix); err != nil {
		return nil, err
	}
	s := &RedisStore{run: run, prefix: opts.KeyPrefix, cluster: opts.Cluster, callerTime: opts.CallerTime}
	if s.prep, _ = run.(preparedRunner); s.prep != nil {
		s.evalPrepared = s.prep.EvalShaPrepared
	}
	s.args.Store(new(sync.Map))
	return s, nil
}

// zoneRule identifies what a zone is to a remote store: the name in its
// keys and the rule its counts obey. Zones replaced by a reload with the
// same name and rule share it.
type zoneRule struct {
	name string
	rule Rule
}

// maxCachedRules bounds RedisStore's cache of script arguments.
const maxCachedRules = 1024

// CheckRedisRule reports whether a normalized rule can be kept in Redis,
// whose script counts time in whole microseconds, and whether zone is a
// usable name in a Redis key; the error is a *FieldError. Normalize has bounded the window by
// MaxWindow, whose microseconds Lua's doubles hold exactly.
func CheckRedisRule(zone string, r Rule) error {
	if strings.ContainsAny(zone, "{}") {
		return fieldError(FieldName, strconv.Quote(zone)+" must not have braces to be kept in redis")
	}
	if r.Window%time.Microsecond != 0 {
		return fieldError(FieldWindow, r.Window.String()+" must be whole microseconds to be kept in redis")
	}
	if r.SubWindow%time.Microsecond != 0 {
		return fieldError(FieldSubWindow, r.SubWindow.String()+" must be whole microseconds to be kept in redis")
	}
	return nil
}

// Take implements Store.
func (s *RedisStore) Take(ctx context.Context, now time.Time, items []Item, out []Decision) (bool, error) {
	return redisTake(s, ctx, now, items, out)
}

// redisTake is Take as a plain function, which Guard calls: under yaegi
// a method call costs several function calls. The common request goes to
// takeOne, the rest to takeMany, so that this frame stays small.
func redisTake(s *RedisStore, ctx context.Context, now time.Time, items []Item, out []Decision) (bool, error) {
	if len(items) == 1 && items[0].Limit <= 0 && items[0].Lease <= 0 && s.prep != nil && !s.callerTime {
		return takeOne(s, ctx, now, items, out)
	}
	return s.takeMany(ctx, now, items, out)
}

// takeMany is Take through the general path: call, per hash tag in
// Cluster mode.
func (s *RedisStore) takeMany(ctx context.Context, now time.Time, items []Item, out []Decision) (bool, error) {
	keys := make([]string, len(items))
	for i := range items {
		keys[i] = RedisKey(s.prefix, items[i].Zone.Name(), items[i].Key)
	}
	if !s.cluster || sameTag(keys) {
		return s.call(ctx, now, items, keys, nil, out)
	}
	// One call per hash tag, in the order the tags first appear. A group
	// Redis could not count does not stop the others: a later denial
	// still holds.
	groups := tagGroups(keys)
	var notCounted error
	for g, group := range groups {
		allowed, err := s.call(ctx, now, items, keys, group, out)
		if errors.Is(err, ErrOutOfMemory) {
			notCounted, err = err, nil
		}
		if err != nil {
			return false, err
		}
		if !allowed {
			for _, later := range groups[g+1:] {
				for _, j := range later {
					out[j] = unconsulted(&items[j])
				}
			}
			return false, nil
		}
	}
	return true, notCounted
}

// tagGroups returns the indexes of keys grouped by their cluster hash tag,
// in the order the tags first appear: one script call each in Cluster
// mode.
func tagGroups(keys []string) [][]int {
	var groups [][]int
	done := make([]bool, len(keys))
	for i := range keys {
		if done[i] {
			continue
		}
		tag := HashTag(keys[i])
		var group []int
		for j := i; j < len(keys); j++ {
			if !done[j] && HashTag(keys[j]) == tag {
				group = append(group, j)
				done[j] = true
			}
		}
		groups = append(groups, group)
	}
	return groups
}

// call decides the items named by group (all items when group is nil) in
// one script call.
func (s *RedisStore) call(ctx context.Context, now time.Time, items []Item, keys []string, group []int, out []Decision) (bool, error) {
	n := len(items)
	if group != nil {
		n = len(group)
	}
	callKeys := keys
	if group != nil {
		callKeys = make([]string, n)
	}
	args := make([]string, 1, 1+2*n)
	args[0] = "0"
	if s.callerTime {
		args[0] = strconv.FormatInt(now.UnixMicro(), 10)
	}
	want := 0 // integers in the reply: 4 per item, 6 per reserved one, 7 per lease
	for j := 0; j < n; j++ {
		i := j
		if group != nil {
			i = group[j]
			callKeys[j] = keys[i]
		}
		spec, err := s.ruleArgs(items[i].Zone)
		if err != nil {
			return false, err
		}
		want += 4
		switch {
		case items[i].Refundable:
			args = append(args, modeReserve)
			want += 2
		case items[i].Lease > 0:
			args = append(args, modeLease)
			want += 3
		default:
			args = append(args, modeTake)
		}
		args = append(args, spec...)
		if n := items[i].Limit; n > 0 && n != items[i].Zone.rule.Limit {
			// The key's own limit; the cached spec stays the rule's.
			args[len(args)-1] = withLimit(spec[0], n)
		}
		if !items[i].Refundable && items[i].Lease > 0 {
			args[len(args)-1] = withInt(args[len(args)-1], items[i].Lease)
		}
	}
	res, err := s.eval(ctx, callKeys, args)
	if err != nil {
		return false, err
	}
	notCounted := len(res) == want+1 && res[want] == redisNotCounted
	if len(res) != want && !notCounted {
		return false, fmt.Errorf("redis limiter script: got %d integers for %d keys", len(res), n)
	}
	allowed := true
	for j, p := 0, 0; j < n; j++ {
		i := j
		if group != nil {
			i = group[j]
		}
		r := res[p : p+4]
		out[i] = Decision{
			Allowed:    r[0] == 1,
			Limit:      items[i].limit(),
			Remaining:  r[1],
			RetryAfter: time.Duration(r[2]) * time.Microsecond,
			ResetAfter: time.Duration(r[3]) * time.Microsecond,
		}
		p += 4
		switch {
		case items[i].Refundable:
			if res[p] != 0 {
				out[i].receipt = receipt{at: res[p], life: res[p+1], remote: true}
			}
			p += 2
		case items[i].Lease > 0:
			// The key's life comes with a denial too: a lease held on
			// another is no longer counted (see Decision.Life).
			out[i].receipt = receipt{life: res[p+2], remote: true}
			if res[p] > 0 && res[p+1] > 0 {
				out[i].Leased = res[p]
				out[i].LeaseFor = leaseFor(items[i].Zone.rule, res[p+1])
				out[i].receipt.at = res[p+1]
			}
			p += 3
		}
		allowed = allowed && out[i].Allowed
	}
	if notCounted {
		return allowed, ErrOutOfMemory
	}
	return allowed, nil
}

// preparedCall is a zone's script call on one key, encoded once by a
// store's preparedRunner: the parts around the key, with the tail of each
// mode, and the key's beginning.
type preparedCall struct {
	store         *RedisStore
	keyHead       string // prefix, zone name and ":{" (see RedisKey)
	head          string
	take, reserve string
}

// takeOne is Take of one item at its rule's limit, the Traefik plugin's
// every request: one script call with the arguments prepareCall encoded,
// in few locals, since under yaegi a call allocates each of its callee's
// locals and temporaries. A rule Redis cannot keep goes to call, which
// reports it; a NOSCRIPT reply or an error to takeOneOther.
func takeOne(s *RedisStore, ctx context.Context, now time.Time, items []Item, out []Decision) (bool, error) {
	it := &items[0]
	pc, _ := it.Zone.redisCall.Load().(*preparedCall)
	if pc == nil || pc.store != s {
		if pc = prepareCall(s, it.Zone); pc == nil {
			// call reports the rule's error.
			keys := []string{RedisKey(s.prefix, it.Zone.name, it.Key)}
			return s.call(ctx, now, items, keys, nil, out)
		}
	}
	key := it.Key
	// redisKeyPart's test, inline: under yaegi the call would cost every
	// request of this path its frame.
	if len(key) > MaxRedisKeyPart || len(key) > 0 && key[0] == '#' {
		key = redisKeyPart(key)
	}
	tail := pc.take
	if it.Refundable {
		tail = pc.reserve
	}
	res, err := s.evalPrepared(ctx, pc.head, pc.keyHead+key+"}", tail)
	return takeOneDone(s, ctx, now, items, out, res, err)
}

// takeOneDone finishes takeOne given the reply res and error err of its
// script call: four integers, two more for a reserved item (its receipt
// and the key's life), and one more if Redis could not count the request.
func takeOneDone(s *RedisStore, ctx context.Context, now time.Time, items []Item, out []Decision, res []int64, err error) (bool, error) {
	it := &items[0]
	want := 4
	if it.Refundable {
		want = 6
	}
	if err != nil || len(res) != want && (len(res) != want+1 || res[want] != redisNotCounted) {
		return takeOneOther(s, ctx, now, items, out, res, err)
	}
	out[0] = Decision{
		Allowed:    res[0] == 1,
		Limit:      it.Zone.rule.Limit,
		Remaining:  res[1],
		RetryAfter: time.Duration(res[2]) * time.Microsecond,
		ResetAfter: time.Duration(res[3]) * time.Microsecond,
	}
	if it.Refundable && res[4] != 0 {
		out[0].receipt = receipt{at: res[4], life: res[5], remote: true}
	}
	if len(res) > want {
		return out[0].Allowed, ErrOutOfMemory
	}
	return out[0].Allowed, nil
}

// takeOneOther finishes takeOne when its call failed with err or returned
// res, the wrong number of integers. For NOSCRIPT, which ran nothing,
// call sends the script's text.
func takeOneOther(s *RedisStore, ctx context.Context, now time.Time, items []Item, out []Decision, res []int64, err error) (bool, error) {
	if err != nil && isNoScript(err) {
		keys := []string{RedisKey(s.prefix, items[0].Zone.Name(), items[0].Key)}
		return s.call(ctx, now, items, keys, nil, out)
	}
	if err != nil {
		return false, fmt.Errorf("redis limiter script: %w", err)
	}
	return false, fmt.Errorf("redis limiter script: got %d integers for %d keys", len(res), 1)
}

// prepareCall encodes z's script call on one key through s's
// preparedRunner, with the arguments call would send for an item of z at
// its rule's limit, and keeps it in z. It returns nil when z's rule
// cannot be kept in Redis.
func prepareCall(s *RedisStore, z *Zone) *preparedCall {
	spec, err := s.ruleArgs(z)
	if err != nil {
		return nil
	}
	args := append([]string{"0", modeTake}, spec...)
	pc := &preparedCall{store: s, keyHead: s.prefix + z.name + ":{"}
	pc.head, pc.take = s.prep.PrepareEvalSha(redisScriptSHA, args)
	args[1] = modeReserve
	_, pc.reserve = s.prep.PrepareEvalSha(redisScriptSHA, args)
	z.redisCall.Store(pc)
	return pc
}

// The script's modes of an item (see redisScript).
const (
	modeTake    = "0"
	modeReserve = "1"
	modeLease   = "2"
	modeRefund  = "3"
	modeReset   = "4"
)

// leaseFor returns how long units counted at the script time at (in
// microseconds) stay in the newest sub-window of rule r: until its end.
func leaseFor(r Rule, at int64) time.Duration {
	t := int64(r.SubWindow / time.Microsecond)
	return time.Duration(t-at%t) * time.Microsecond
}

// withInt returns the packed argument s with the integer x appended in
// eight little-endian bytes: a lease's size, a refund's receipt.
func withInt(s string, x int64) string {
	b := make([]byte, 0, len(s)+8)
	b = append(b, s...)
	for j := 0; j < 8; j++ {
		b = append(b, byte(x>>(8*j)))
	}
	return string(b)
}

// eval runs the script by its SHA1 and sends the text once when the server
// lost it (restart, failover, SCRIPT FLUSH).
func (s *RedisStore) eval(ctx context.Context, keys, args []string) ([]int64, error) {
	res, err := s.run.EvalSha(ctx, redisScriptSHA, keys, args)
	if err != nil && isNoScript(err) {
		res, err = s.run.Eval(ctx, redisScript, keys, args)
	}
	if err != nil {
		return nil, fmt.Errorf("redis limiter script: %w", err)
	}
	return res, nil
}

// Ping runs the script with no keys: it checks that Redis answers and
// loads the script if needed. The breaker's probe calls it.
func (s *RedisStore) Ping(ctx context.Context) error {
	_, err := s.eval(ctx, nil, []string{"0"})
	return err
}

// ruleArgs returns the script arguments of z's rule, made once per zone
// name and rule: one string, the rule packed as the script reads it with
// struct.unpack (see packRule), so that the script converts no decimal
// text on a request.
func (s *RedisStore) ruleArgs(z *Zone) ([]string, error) {
	key := zoneRule{z.name, z.rule}
	args := s.args.Load().(*sync.Map)
	if v, ok := args.Load(key); ok {
		return v.([]string), nil
	}
	r := z.rule
	if err := CheckRedisRule(z.name, r); err != nil {
		return nil, err
	}
	spec := []string{packRule(r, r.Limit)}
	if atomic.AddInt64(&s.argsSize, 1) > maxCachedRules {
		// Start a new cache; the zones in use fill it again.
		args = new(sync.Map)
		s.args.Store(args)
		atomic.StoreInt64(&s.argsSize, 1)
	}
	args.Store(key, spec)
	return spec, nil
}

// packRule returns rule r with limit n as the script's rule argument:
// little-endian, the algorithm in one byte, then in eight bytes each the
// window and the sub-window in microseconds, the limit, the cost and the
// shape (shapeField), struct format '<i1i8i8i8i8i8'.
func packRule(r Rule, n int64) string {
	b := make([]byte, 0, ruleBytes)
	b = append(b, byte(r.Algorithm))
	for _, x := range [...]int64{int64(r.Window / time.Microsecond), int64(r.SubWindow / time.Microsecond), n, r.Cost, shapeField(r)} {
		for j := 0; j < 8; j++ {
			b = append(b, byte(x>>(8*j)))
		}
	}
	return string(b)
}

// ruleBytes is the length of a packed rule, and ruleLimit the offset of
// its limit.
const (
	ruleBytes = 41
	ruleLimit = 17
)

// withLimit returns the packed rule with the limit n in place of its own.
func withLimit(rule string, n int64) string {
	b := []byte(rule)
	for j := 0; j < 8; j++ {
		b[ruleLimit+j] = byte(n >> (8 * j))
	}
	return string(b)
}

// shapeField is the shape at the head of a bucket rule's key (and the
// name of the hash field that held the newest sub-window index in the
// script's previous version, whose keys the script converts). It encodes
// the sub-window T and the count k = W/T, so
// counters written with another sub-window or window are never misread,
// while sliding, strict and fixed (k = 1), which count the same
// sub-windows, keep each other's counts, as a change of limit or cost
// does (TestRedisAlgorithmChange pins each change): a negative
// integer, -((T*1024 + k*4) + unit) with T in seconds, milliseconds or
// microseconds (unit 2, 1, 0), whichever is whole. CheckRedisRule's
// bounds keep it within an int64.
func shapeField(r Rule) int64 {
	t, unit := int64(r.SubWindow/time.Microsecond), int64(0)
	switch {
	case t%1e6 == 0:
		t, unit = t/1e6, 2
	case t%1e3 == 0:
		t, unit = t/1e3, 1
	}
	k := int64(r.Window / r.SubWindow)
	return -(t*1024 + k*4 + unit)
}

// isNoScript reports whether err is Redis's answer to EVALSHA for a script
// it does not hold.
func isNoScript(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "NOSCRIPT") || strings.Contains(msg, ": NOSCRIPT")
}

// sameTag reports whether all keys share one cluster hash tag.
func sameTag(keys []string) bool {
	for i := 1; i < len(keys); i++ {
		if HashTag(keys[i]) != HashTag(keys[0]) {
			return false
		}
	}
	return true
}

// unconsulted is the decision reported for an item that was not asked
// because another item of the request already denied it: allowed, as far
// as this item knows, with its remaining count unknown and reported as 0.
// Tightest never picks it over the denial.
func unconsulted(it *Item) Decision {
	return Decision{Allowed: true, Limit: it.limit()}
}
