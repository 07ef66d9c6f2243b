package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Refund implements Refunder: one script call (per hash tag in Cluster
// mode) gives back the counts of the Refundable items whose decisions hold
// a receipt of Redis. Each comes off the sub-window (or the log entry) it
// was counted in, if the key still holds it there.
func (s *RedisStore) Refund(ctx context.Context, items []Item, out []Decision) error {
	var keys, args []string
	for i := range items {
		r := out[i].receipt
		if !items[i].Refundable || r.at == 0 || !r.remote {
			continue
		}
		spec, err := s.ruleArgs(items[i].Zone)
		if err != nil {
			return err
		}
		if args == nil {
			args = append(args, "0")
		}
		keys = append(keys, RedisKey(s.prefix, items[i].Zone.Name(), items[i].Key))
		args = append(args, modeRefund, withReceipt(spec[0], items[i].limit(), r, LeaseUse{}))
	}
	if len(keys) == 0 {
		return nil
	}
	if !s.cluster || sameTag(keys) {
		return s.refund(ctx, keys, args)
	}
	var failed error
	for _, group := range tagGroups(keys) {
		gk, ga := make([]string, 0, len(group)), []string{"0"}
		for _, j := range group {
			gk = append(gk, keys[j])
			ga = append(ga, args[1+2*j], args[2+2*j])
		}
		failed = errors.Join(failed, s.refund(ctx, gk, ga))
	}
	return failed
}

// refund runs one refund call and checks its reply.
func (s *RedisStore) refund(ctx context.Context, keys, args []string) error {
	res, err := s.eval(ctx, keys, args)
	if err != nil {
		return err
	}
	if len(res) != len(keys) {
		return fmt.Errorf("redis limiter script: got %d integers for %d refunds", len(res), len(keys))
	}
	return nil
}

// withReceipt returns a refund's rule argument: the packed rule with the
// limit n and, after it, the receipt's time and life, and for a lease the
// units it was granted and the ones it spent before its life was last
// confirmed (zero for a reservation).
func withReceipt(rule string, n int64, r receipt, use LeaseUse) string {
	return withInt(withInt(withInt(withInt(withLimit(rule, n), r.at), r.life), use.Granted), use.Confirmed)
}

// LeaseUse is what became of the units of a lease: Granted were granted
// in its sub-window, Unspent are left, and Confirmed were spent before a
// reply of the store last found the key in the lease's life (so before
// any reset of it).
type LeaseUse struct {
	Granted, Unspent, Confirmed int64
}

// giveBack returns the unspent units of the lease d granted on key in z
// (an item at limit n), at now: a refund of them from the sub-window they
// were counted in, if the key still holds them there in d's life. In the
// life an operator's reset carried them into, the units spent before the
// reset come back too. In another life (Redis lost the key), the script
// counts the units spent since the last confirmation instead, if their
// sub-window still counts at now (the server's time, but with
// CallerTime).
func (s *RedisStore) giveBack(ctx context.Context, now time.Time, z *Zone, key string, n int64, d *Decision, use LeaseUse) error {
	if use.Unspent < 0 || use.Granted <= 0 || d.receipt.at == 0 || !d.receipt.remote {
		return nil
	}
	r := z.rule
	if err := CheckRedisRule(z.name, r); err != nil {
		return err
	}
	r.Cost = use.Unspent
	arg := withReceipt(packRule(r, n), n, d.receipt, use)
	at := "0"
	if s.callerTime {
		at = strconv.FormatInt(now.UnixMicro(), 10)
	}
	return s.refund(ctx, []string{RedisKey(s.prefix, z.name, key)}, []string{at, modeRefund, arg})
}
