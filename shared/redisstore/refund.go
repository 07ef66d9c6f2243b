package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Refund implements Refunder: one script call (per hash tag in Cluster
// mode) gives back the counts of the Refundable items whose decisions hold
// a receipt of Redis. Each comes off the sub-window (or the log entry) it
// was counted in, if the key still holds it there.
func (s *Store) Refund(ctx context.Context, items []ratelimit.Item, out []ratelimit.Decision) error {
	var keys, args []string
	for i := range items {
		r := out[i].Receipt
		if !items[i].Refundable || r.At == 0 || !r.Remote {
			continue
		}
		spec, err := s.ruleArgs(items[i].Zone)
		if err != nil {
			return err
		}
		if args == nil {
			args = append(args, "0")
		}
		keys = append(keys, Key(s.prefix, items[i].Zone.Name(), items[i].Key))
		args = append(args, modeRefund, withReceipt(spec[0], ratelimit.LimitOf(&items[i]), r, ratelimit.LeaseUse{}))
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
func (s *Store) refund(ctx context.Context, keys, args []string) error {
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
// limit n and, after it, the receipt's time (in µs, the script's unit: the
// store made At from it, so the division is exact) and generation, and for
// a lease the units it was granted and the ones it spent before its
// generation was last confirmed (zero for a reservation).
func withReceipt(rule string, n int64, r ratelimit.Receipt, use ratelimit.LeaseUse) string {
	return withInt(withInt(withInt(withInt(withLimit(rule, n), r.At/1000), int64(r.Generation)), use.Granted), use.Confirmed)
}

// GiveBack returns the unspent units of the lease d granted on it's key,
// use telling what became of them: a refund of them from the sub-window
// they were counted in, if the key still holds them there in d's
// generation. In the generation an operator's reset kept them counted in
// (see Forget), the units spent before the reset come back too. In another
// generation (Redis lost the key), the script counts the units spent since
// the last confirmation instead, if their sub-window still counts at now
// (the server's time, but with CallerTime).
func (s *Store) GiveBack(ctx context.Context, now time.Time, it ratelimit.Item, d ratelimit.Decision, use ratelimit.LeaseUse) error {
	if use.Unspent < 0 || use.Granted <= 0 || d.Receipt.At == 0 || !d.Receipt.Remote {
		return nil
	}
	z, n := it.Zone, ratelimit.LimitOf(&it)
	r := z.Rule()
	if err := CheckRule(z.Name(), r); err != nil {
		return err
	}
	r.Cost = use.Unspent
	arg := withReceipt(packRule(r, n), n, d.Receipt, use)
	at := "0"
	if s.callerTime {
		at = strconv.FormatInt(now.UnixMicro(), 10)
	}
	return s.refund(ctx, []string{Key(s.prefix, z.Name(), it.Key)}, []string{at, modeRefund, arg})
}
