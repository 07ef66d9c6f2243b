package redisstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// KeyCall is a zone's script call on one key, encoded once for every key:
// the call TakeKey makes on the Traefik plugin's every request with a
// redis block, with the guard's signals it reads before.
type KeyCall struct {
	run           func(ctx context.Context, head, key, tail string) ([]int64, error)
	client        *resp.Client // the store's, called directly when set (see Store)
	head, keyHead string       // the call's part before the key; the key's beginning (see Key)
	tail          string       // the call's part after the key, a take's
	limit         int64        // the zone's rule's
	zone          *ratelimit.Zone
	store         *Store
	call          *preparedCall
	signals       *int64 // the guard's (guard.Signals)
}

// KeyCall returns z's script call on one key through g, prepared once for
// every key, for TakeKey. g must be the guard whose store s is. It returns
// nil when the store has no such call: a runner that cannot prepare
// calls, CallerTime, a rule Redis cannot keep, or a zone with a ban.
func (s *Store) KeyCall(z *ratelimit.Zone, g *guard.Guard) *KeyCall {
	if s.prep == nil || s.callerTime {
		return nil
	}
	pc := preparedFor(s, z)
	if pc == nil {
		return nil
	}
	kc := &KeyCall{run: s.evalPrepared, client: s.client, head: pc.head, keyHead: pc.keyHead, tail: pc.take,
		limit: pc.limit, zone: z, store: s, call: pc}
	kc.signals = guard.Signals(g)
	return kc
}

// TakeKey decides one request on key in z at now through g, as g's Take
// of one item would, with kc, z's KeyCall through g (nil when it has
// none). The common request (no denial cached, the breaker closed, a key
// Redis takes as is, admitted) is kc's call and its reply's decision,
// written out here; the rest goes through g (guard.TakeOne,
// guard.Answered).
//
// A function, not a method, and without a frame of the guard's or the
// store's on the common request: interpreted, each costs it some 30
// allocations (see the package documentation).
func TakeKey(ctx context.Context, g *guard.Guard, kc *KeyCall, z *ratelimit.Zone, key string, now time.Time) ratelimit.Decision {
	// A key from "#" to before "$" starts with '#' (see Key): two
	// comparisons, fewer slots than an index.
	if kc == nil || len(key) > MaxKeyPart || key >= "#" && key < "$" ||
		atomic.LoadInt64(kc.signals) != 0 {
		return guard.TakeOne(ctx, g, z, key, now)
	}
	if kc.client == nil {
		return keyRun(ctx, g, kc, key, now)
	}
	res, err := resp.EvalPrepared(ctx, kc.client, kc.head, kc.keyHead+key+"}", kc.tail)
	if err != nil || len(res) != 4 || res[0] != 1 {
		return keyRest(ctx, g, kc, key, now, res, err)
	}
	return decision{
		Allowed:    true,
		Limit:      kc.limit,
		Remaining:  res[1],
		RetryAfter: duration(res[2]) * microsecond,
		ResetAfter: duration(res[3]) * microsecond,
	}
}

// microsecond is time.Microsecond as a constant of this package, and
// decision and duration are ratelimit.Decision and time.Duration under
// names of this package: interpreted, another package's name costs
// TakeKey a frame slot where this package's costs none (see the package
// documentation).
const microsecond = time.Microsecond

type (
	decision = ratelimit.Decision
	duration = time.Duration
)

// keyRun is TakeKey through a runner other than shared/resp's client: its
// call, and the reply through keyRest. It is apart so that TakeKey's frame
// holds no slot of this call: interpreted, 8 allocations a request.
func keyRun(ctx context.Context, g *guard.Guard, kc *KeyCall, key string, now time.Time) ratelimit.Decision {
	res, err := kc.run(ctx, kc.head, kc.keyHead+key+"}", kc.tail)
	return keyRest(ctx, g, kc, key, now, res, err)
}

// keyRest finishes TakeKey with the reply res and error err of kc's call
// on key: a denial, a reply of more integers, or a failure, which g then
// answers as its Take would.
func keyRest(ctx context.Context, g *guard.Guard, kc *KeyCall, key string, now time.Time, res []int64, err error) ratelimit.Decision {
	items := []ratelimit.Item{{Zone: kc.zone, Key: key}}
	out := make([]ratelimit.Decision, 1)
	allowed, err := takeOneDone(ctx, kc.store, kc.call, now, items, out, res, err)
	guard.Answered(ctx, g, now, items, out, allowed, err)
	return out[0]
}
