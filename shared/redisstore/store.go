package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
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

// ErrOutOfMemory is the error Store.Take wraps when Redis would admit
// the request but cannot count it: it is over its maxmemory, so the script
// wrote nothing. out then holds Redis's decisions. Guard decides such a
// request by its failure policy without tripping the breaker, and keeps
// every denial Redis computes.
var ErrOutOfMemory = errors.New("redis is out of memory (maxmemory reached): requests it would admit cannot be counted; raise maxmemory or see the sizing guide")

// redisNotCounted is the integer the script appends to its reply when
// Redis would admit the request but refused to count it for lack of
// memory.
const redisNotCounted = 1

// Store is the ratelimit.Store that keeps the counts in Redis, so that
// every instance sharing the Redis enforces one limit exactly. One request
// is one script call (per distinct key in Cluster mode), timed by the
// server's clock. It reports Redis's failures; a guard in front of it
// applies the failure policy.
type Store struct {
	run  ScriptRunner
	prep preparedRunner // run, when it is one
	// slotRun is run when it prepares calls on two keys (TakeSlot).
	slotRun slotRunner
	// evalPrepared is prep's EvalShaPrepared as a func value, half the
	// cost of a call through an interface (see the package
	// documentation).
	evalPrepared func(ctx context.Context, head, key, tail string) ([]int64, error)
	// client is run when it is shared/resp's Client (the Traefik plugin's),
	// whose prepared call takeOne and TakeKey name directly: interpreted,
	// some 10 allocations a request fewer than through evalPrepared.
	client  *resp.Client
	prefix  string
	cluster bool
	// args caches the six script arguments of each zone, by zone name and
	// rule rather than by *Zone, so a replaced zone is not kept alive: a
	// *sync.Map of zoneRule to []string, replaced when it holds
	// maxCachedRules (reloads with ever new rules cannot grow it).
	args     atomic.Value
	argsSize int64
	// calls caches the prepared call of each zone by its number, a
	// *sync.Map
	// bounded in the same way (see preparedFor).
	calls     atomic.Value
	callsSize int64
	// last is the *preparedCall takeOne used last, found without a lookup
	// when the next request is of the same zone.
	last atomic.Value
	// callerTime is Settings.CallerTime.
	callerTime bool
	// lost has a script's bit (lostScript, lostFull) while a prepared call
	// of it found the server without it: the general path that decides
	// the request then sends the script's text at once, not its SHA1
	// again (see evalWith).
	lost int32
	// take is Take as a closure (see TakeFunc).
	take func(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error)
}

// New returns a store that runs the limiter script through run.
func New(run ScriptRunner, opts Settings) (*Store, error) {
	if run == nil {
		return nil, errors.New("redis store: no script runner")
	}
	if err := checkKeyPrefix(opts.KeyPrefix); err != nil {
		return nil, err
	}
	s := &Store{run: run, prefix: opts.KeyPrefix, cluster: opts.Cluster, callerTime: opts.CallerTime}
	if s.prep, _ = run.(preparedRunner); s.prep != nil {
		s.evalPrepared = s.prep.EvalShaPrepared
		s.client, _ = run.(*resp.Client)
		s.slotRun, _ = run.(slotRunner)
	}
	s.args.Store(new(sync.Map))
	s.calls.Store(new(sync.Map))
	s.take = takeFunc(s)
	return s, nil
}

// Take implements ratelimit.Store. The common request, one item at its
// rule's limit through a runner that prepares calls, goes to takeOne, the
// rest to takeMany, so that this frame stays small.
func (s *Store) Take(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	if len(items) == 1 && items[0].Limit <= 0 && items[0].Lease <= 0 && s.prep != nil && !s.callerTime {
		return takeOne(ctx, s, now, items, out)
	}
	return s.takeMany(ctx, now, items, out)
}

// TakeFunc returns Take as a func value, which a guard calls
// interpreted for a fraction of what a method call costs.
func (s *Store) TakeFunc() func(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	return s.take
}

// takeFunc returns s's Take as a closure, which writes out Take's body
// rather than call it, sparing the frame.
func takeFunc(s *Store) func(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	return func(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
		if len(items) == 1 && items[0].Limit <= 0 && items[0].Lease <= 0 && s.prep != nil && !s.callerTime {
			return takeOne(ctx, s, now, items, out)
		}
		return s.takeMany(ctx, now, items, out)
	}
}

// TakeSlot implements ratelimit.SlotTaker: Take, and the slot of items'
// only item taken in the same script call (see SLOT in script.lua).
func (s *Store) TakeSlot(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision, slot *ratelimit.Slot) (bool, error) {
	if slot == nil {
		return s.Take(ctx, now, items, out)
	}
	if len(items) != 1 {
		return false, errors.New("redis store: a slot goes with one item")
	}
	if it := &items[0]; it.Limit <= 0 && it.Lease <= 0 && !it.Refundable && s.slotRun != nil && !s.callerTime {
		if allowed, ok, err := takeSlotPrepared(ctx, s, it.Zone, it.Key, out, slot); ok {
			return allowed, err
		}
	}
	return s.call(ctx, now, items, []string{Key(s.prefix, items[0].Zone.Name(), items[0].Key)}, nil, out, slot)
}

// takeMany is Take through the general path: call, per hash tag in
// Cluster mode.
func (s *Store) takeMany(ctx context.Context, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	keys := make([]string, len(items))
	for i := range items {
		keys[i] = Key(s.prefix, items[i].Zone.Name(), items[i].Key)
	}
	if !s.cluster || sameTag(keys) {
		return s.call(ctx, now, items, keys, nil, out, nil)
	}
	// One call per hash tag, in the order the tags first appear. A group
	// Redis could not count does not stop the others: a later denial
	// still holds.
	groups := tagGroups(keys)
	var notCounted error
	for g, group := range groups {
		allowed, err := s.call(ctx, now, items, keys, group, out, nil)
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
// one script call, and takes slot, when set, for the one item.
func (s *Store) call(ctx context.Context, now time.Time, items []ratelimit.Item, keys []string, group []int, out []ratelimit.Decision, slot *ratelimit.Slot) (bool, error) {
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
	want := 0 // integers in the reply: 4 per item, 6 per reserved one, 7 per lease, 1 more with a ban
	var banKeys, banArgs []string
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
		if n := items[i].Limit; n > 0 && n != items[i].Zone.Rule().Limit {
			// The key's own limit; the cached spec stays the rule's.
			args[len(args)-1] = withLimit(spec[0], n)
		}
		if !items[i].Refundable && items[i].Lease > 0 {
			args[len(args)-1] = withInt(args[len(args)-1], items[i].Lease)
		}
		if ban := items[i].Zone.Ban(); ban > 0 {
			banKeys = append(banKeys, callKeys[j]+banSuffix)
			banArgs = append(banArgs, banArg(j+1, ban))
			want++
		}
	}
	if slot != nil {
		banKeys = append(banKeys, slot.Set)
		banArgs = append(banArgs, slotArg(slot))
		want++
	}
	if banKeys != nil {
		callKeys = append(append(make([]string, 0, n+len(banKeys)), callKeys[:n]...), banKeys...)
		args = append(args, banArgs...)
	}
	var res []int64
	var err error
	if banKeys == nil {
		res, err = s.eval(ctx, callKeys, args)
	} else {
		res, err = s.evalFull(ctx, callKeys, args)
	}
	if err != nil {
		return false, err
	}
	if slot != nil {
		var full bool
		if res, full = readSlot(res, slot); full {
			// Nothing was decided or counted.
			out[0] = ratelimit.Decision{Limit: ratelimit.LimitOf(&items[0])}
			return false, nil
		}
		want--
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
		out[i] = ratelimit.Decision{
			Allowed:    r[0] == 1,
			Limit:      ratelimit.LimitOf(&items[i]),
			Remaining:  r[1],
			RetryAfter: time.Duration(r[2]) * time.Microsecond,
			ResetAfter: time.Duration(r[3]) * time.Microsecond,
		}
		p += 4
		if items[i].Zone.Ban() > 0 {
			if res[p] == 1 {
				items[i].Zone.NoteBan()
			}
			p++
		}
		switch {
		case items[i].Refundable:
			if res[p] != 0 {
				// At from the script's µs to nanoseconds, as in takeOneDone.
				out[i].Receipt = ratelimit.Receipt{At: res[p] * 1000, Generation: uint64(res[p+1]), Remote: true}
			}
			p += 2
		case items[i].Lease > 0:
			// The key's generation comes with a denial too: a lease held on
			// another is no longer counted (see ratelimit.Receipt).
			out[i].Receipt = ratelimit.Receipt{Generation: uint64(res[p+2]), Remote: true}
			if res[p] > 0 && res[p+1] > 0 {
				out[i].Leased = res[p]
				out[i].LeaseFor = leaseFor(items[i].Zone.Rule(), res[p+1])
				out[i].Receipt.At = res[p+1] * 1000
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

// eval runs the script by its SHA1 and sends the text once when the server
// lost it (restart, failover, SCRIPT FLUSH).
func (s *Store) eval(ctx context.Context, keys, args []string) ([]int64, error) {
	res, err := s.evalWith(ctx, redisScript, redisScriptSHA, keys, args)
	if err != nil {
		return nil, fmt.Errorf("redis limiter script: %w", err)
	}
	return res, nil
}

// evalWith runs script by its SHA1 sha, and sends its text when the
// server does not hold it.
func (s *Store) evalWith(ctx context.Context, script, sha string, keys, args []string) ([]int64, error) {
	if atomic.LoadInt32(&s.lost) != 0 && s.found(sha) {
		// A prepared call was just refused it: the SHA1 would be too.
		return s.run.Eval(ctx, script, keys, args)
	}
	res, err := s.run.EvalSha(ctx, sha, keys, args)
	if err != nil && isNoScript(err) {
		res, err = s.run.Eval(ctx, script, keys, args)
	}
	return res, err
}

// Bits of Store.lost.
const (
	lostScript int32 = 1 << iota // the script (redisScriptSHA)
	lostFull                     // the full script (redisFullScriptSHA)
)

// markLost records that a prepared call of the script of bit found the
// server without it.
func (s *Store) markLost(bit int32) {
	for {
		old := atomic.LoadInt32(&s.lost)
		if old&bit != 0 || atomic.CompareAndSwapInt32(&s.lost, old, old|bit) {
			return
		}
	}
}

// found clears the lost bit of the script of sha and reports whether it
// was set: the one call that clears it sends the script's text.
func (s *Store) found(sha string) bool {
	var bit int32
	switch sha {
	case redisScriptSHA:
		bit = lostScript
	case redisFullScriptSHA:
		bit = lostFull
	default:
		return false
	}
	for {
		old := atomic.LoadInt32(&s.lost)
		if old&bit == 0 {
			return false
		}
		if atomic.CompareAndSwapInt32(&s.lost, old, old&^bit) {
			return true
		}
	}
}

// Ping runs the script with no keys: it checks that Redis answers and
// loads the script if needed. The breaker's probe calls it.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.eval(ctx, nil, []string{"0"})
	return err
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
func unconsulted(it *ratelimit.Item) ratelimit.Decision {
	return ratelimit.Decision{Allowed: true, Limit: ratelimit.LimitOf(it)}
}

// fieldError returns a *ratelimit.FieldError.
func fieldError(f ratelimit.Field, msg string) error {
	return &ratelimit.FieldError{Field: f, Msg: msg}
}
