package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// preparedRunner is a ScriptRunner that encodes a call's arguments once
// for many keys: shared/resp's Client. Through one, Store decides a
// request of one item, the Traefik plugin's every request, with
// arguments encoded once per zone (takeOne).
type preparedRunner interface {
	// PrepareEvalSha encodes an EVALSHA of sha on one key with args, in
	// the parts before and after the key.
	PrepareEvalSha(sha string, args []string) (head, tail string)
	// EvalShaPrepared runs the EVALSHA that head and tail enclose on key.
	EvalShaPrepared(ctx context.Context, head, key, tail string) ([]int64, error)
}

// preparedCall is a zone's script call on one key, encoded once by a
// store's preparedRunner: the parts around the key, with the tail of each
// mode, and the key's beginning.
type preparedCall struct {
	store         *Store
	zoneNumber    uint64 // the zone's (ratelimit.ZoneNumber)
	limit         int64  // the zone's rule's
	keyHead       string // prefix, zone name and ":{" (see Key)
	head          string
	take, reserve string
	// slotHead and slotMid enclose the call that takes an in-flight slot
	// with the decision (see takeSlotPrepared), when the runner prepares
	// calls on two keys.
	slotHead, slotMid string
}

// slotRunner is a preparedRunner that also prepares a call on two keys
// with a last argument of the request's own: shared/resp's Client.
type slotRunner interface {
	PrepareEvalSha2(sha string, args []string) (head, mid string)
	EvalShaPrepared2(ctx context.Context, head, key, key2, mid, last string) ([]int64, error)
}

// takeOne is Take of one item at its rule's limit: one script call with
// the arguments prepareCall encoded. A rule Redis cannot keep goes to
// call, which reports it; a NOSCRIPT reply or an error to takeOneOther.
func takeOne(ctx context.Context, s *Store, now time.Time, items []ratelimit.Item, out []ratelimit.Decision) (bool, error) {
	it := &items[0]
	pc, _ := s.last.Load().(*preparedCall)
	if pc == nil || pc.zoneNumber != ratelimit.ZoneNumber(it.Zone) {
		if pc = preparedFor(s, it.Zone); pc != nil {
			s.last.Store(pc)
		}
	}
	if pc == nil {
		// call reports the rule's error.
		keys := []string{Key(s.prefix, it.Zone.Name(), it.Key)}
		return s.call(ctx, now, items, keys, nil, out, nil)
	}
	key := it.Key
	// keyPart's test, inline: the call would cost every request of this
	// path its frame (see the package documentation).
	if len(key) > MaxKeyPart || key != "" && key[0] == '#' {
		key = keyPart(key)
	}
	tail := pc.take
	if it.Refundable {
		tail = pc.reserve
	}
	if s.client == nil {
		return takeOneRun(ctx, s, pc, now, items, out, key, tail)
	}
	res, err := resp.EvalPrepared(ctx, s.client, pc.head, pc.keyHead+key+"}", tail)
	return takeOneDone(ctx, s, pc, now, items, out, res, err)
}

// takeOneRun is takeOne's call on key with tail through a runner other
// than shared/resp's client. It is apart so that takeOne's frame holds no
// slot of this call: interpreted, some 8 allocations a request.
func takeOneRun(ctx context.Context, s *Store, pc *preparedCall, now time.Time, items []ratelimit.Item, out []ratelimit.Decision, key, tail string) (bool, error) {
	res, err := s.evalPrepared(ctx, pc.head, pc.keyHead+key+"}", tail)
	return takeOneDone(ctx, s, pc, now, items, out, res, err)
}

// takeOneDone finishes takeOne of pc given the reply res and error err of
// its script call: four integers, two more for a reserved item (its receipt
// and the key's generation), and one more if Redis could not count the request.
func takeOneDone(ctx context.Context, s *Store, pc *preparedCall, now time.Time, items []ratelimit.Item, out []ratelimit.Decision, res []int64, err error) (bool, error) {
	it := &items[0]
	want := 4
	if it.Refundable {
		want = 6
	}
	if err != nil || len(res) != want && (len(res) != want+1 || res[want] != redisNotCounted) {
		return takeOneOther(ctx, s, now, items, out, res, err)
	}
	out[0] = ratelimit.Decision{
		Allowed:    res[0] == 1,
		Limit:      pc.limit,
		Remaining:  res[1],
		RetryAfter: time.Duration(res[2]) * time.Microsecond,
		ResetAfter: time.Duration(res[3]) * time.Microsecond,
	}
	if it.Refundable && res[4] != 0 {
		// At from the script's µs to nanoseconds: a literal costs the
		// interpreter less than a time.Microsecond conversion.
		out[0].Receipt = ratelimit.Receipt{At: res[4] * 1000, Generation: uint64(res[5]), Remote: true}
	}
	if len(res) > want {
		return out[0].Allowed, ErrOutOfMemory
	}
	return out[0].Allowed, nil
}

// takeOneOther finishes takeOne when its call failed with err or returned
// res, the wrong number of integers. For NOSCRIPT, which ran nothing,
// call sends the script's text, at once (see Store.lost).
func takeOneOther(ctx context.Context, s *Store, now time.Time, items []ratelimit.Item, out []ratelimit.Decision, res []int64, err error) (bool, error) {
	if err != nil && isNoScript(err) {
		s.markLost(lostScript)
		keys := []string{Key(s.prefix, items[0].Zone.Name(), items[0].Key)}
		return s.call(ctx, now, items, keys, nil, out, nil)
	}
	if err != nil {
		return false, fmt.Errorf("redis limiter script: %w", err)
	}
	return false, fmt.Errorf("redis limiter script: got %d integers for %d keys", len(res), 1)
}

// preparedFor returns z's prepared call, or nil when z's rule cannot be
// kept in Redis. It is made once per zone and kept by the zone's number
// (ratelimit.ZoneNumber), which no other zone of the process has, so that
// the cache holds no zone alive. The cache is bounded as ruleArgs's is.
func preparedFor(s *Store, z *ratelimit.Zone) *preparedCall {
	key := ratelimit.ZoneNumber(z)
	calls := s.calls.Load().(*sync.Map)
	if v, ok := calls.Load(key); ok {
		return v.(*preparedCall)
	}
	pc := prepareCall(s, z)
	if pc == nil {
		return nil
	}
	if atomic.AddInt64(&s.callsSize, 1) > maxCachedRules {
		calls = new(sync.Map)
		s.calls.Store(calls)
		atomic.StoreInt64(&s.callsSize, 1)
	}
	calls.Store(key, pc)
	return pc
}

// prepareCall encodes z's script call on one key through s's
// preparedRunner, with the arguments call would send for an item of z at
// its rule's limit. It returns nil when z's rule cannot be kept in Redis,
// and for a zone with a ban, whose call names a second key (see call).
func prepareCall(s *Store, z *ratelimit.Zone) *preparedCall {
	if z.Ban() > 0 {
		return nil
	}
	spec, err := s.ruleArgs(z)
	if err != nil {
		return nil
	}
	args := append([]string{"0", modeTake}, spec...)
	pc := &preparedCall{store: s, zoneNumber: ratelimit.ZoneNumber(z), limit: z.Rule().Limit, keyHead: s.prefix + z.Name() + ":{"}
	pc.head, pc.take = s.prep.PrepareEvalSha(redisScriptSHA, args)
	args[1] = modeReserve
	_, pc.reserve = s.prep.PrepareEvalSha(redisScriptSHA, args)
	if s.slotRun != nil {
		args[1] = modeTake
		pc.slotHead, pc.slotMid = s.slotRun.PrepareEvalSha2(redisFullScriptSHA, args)
	}
	return pc
}

// takeSlotPrepared is TakeSlot of one item of z on key at its rule's
// limit, a take, through the call prepareCall encoded: the Traefik
// plugin's request of a rate beside inFlight, whose general path (call)
// costs the interpreter several times as much. ok is false when z has no
// such call, and the caller takes the general path.
func takeSlotPrepared(ctx context.Context, s *Store, z *ratelimit.Zone, key string, out []ratelimit.Decision, slot *ratelimit.Slot) (allowed, ok bool, err error) {
	pc := preparedFor(s, z)
	if pc == nil || pc.slotHead == "" {
		return false, false, nil
	}
	res, err := s.slotRun.EvalShaPrepared2(ctx, pc.slotHead, Key(s.prefix, z.Name(), key), slot.Set, pc.slotMid, slotArg(slot))
	if err != nil {
		if isNoScript(err) {
			// The server lost the full script: the general path sends it.
			s.markLost(lostFull)
			return false, false, nil
		}
		return false, true, fmt.Errorf("redis limiter script: %w", err)
	}
	allowed, err = slotReply(res, pc.limit, out, slot)
	return allowed, true, err
}

// slotReply reads the reply res of a call of one take with slot at limit:
// readSlot's, then take's four integers, and redisNotCounted when Redis
// could not count the request. readSlot is written out here: its frame
// costs this interpreted path 18 allocations a request (2,781 against
// 2,763 through a Traefik inFlight beside a rate on Redis).
func slotReply(res []int64, limit int64, out []ratelimit.Decision, slot *ratelimit.Slot) (bool, error) {
	if len(res) == 2 && res[0] == -1 {
		slot.State, slot.Held = ratelimit.SlotFull, res[1]
		out[0] = ratelimit.Decision{Limit: limit}
		return false, nil
	}
	if len(res) != 5 && !(len(res) == 6 && res[4] == redisNotCounted) {
		return false, fmt.Errorf("redis limiter script: got %d integers for a key with a slot", len(res))
	}
	if held := res[len(res)-1]; held > 0 {
		slot.State, slot.Held = ratelimit.SlotTaken, held
	}
	out[0] = ratelimit.Decision{
		Allowed:    res[0] == 1,
		Limit:      limit,
		Remaining:  res[1],
		RetryAfter: time.Duration(res[2]) * time.Microsecond,
		ResetAfter: time.Duration(res[3]) * time.Microsecond,
	}
	if len(res) == 6 {
		return out[0].Allowed, ErrOutOfMemory
	}
	return out[0].Allowed, nil
}
