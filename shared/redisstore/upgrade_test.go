package redisstore

import (
	"context"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// hashScript is the limiter script of the previous version, which kept a
// bucket key as a hash: its text as it was released.
func hashScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/script-hash.lua")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// takeHash decides one request of zone z on key with the previous
// script, in its argument layout (seven decimal arguments per item).
func takeHash(t *testing.T, c *resp.Client, script string, prefix string, z *ratelimit.Zone, key string, now time.Time) ratelimit.Decision {
	t.Helper()
	r := z.Rule()
	res, err := c.Do(context.Background(), "EVAL", script, "1", Key(prefix, z.Name(), key),
		strconv.FormatInt(now.UnixMicro(), 10), strconv.Itoa(int(r.Algorithm)),
		strconv.FormatInt(int64(r.Window/time.Microsecond), 10), strconv.FormatInt(int64(r.SubWindow/time.Microsecond), 10),
		strconv.FormatInt(r.Limit, 10), strconv.FormatInt(r.Cost, 10), strconv.FormatInt(shapeField(r), 10), modeTake)
	if err != nil {
		t.Fatal(err)
	}
	return earlierDecision(t, r, res)
}

// earlierDecision reads an earlier script's reply to a take: four
// integers.
func earlierDecision(t *testing.T, r ratelimit.Rule, res resp.Reply) ratelimit.Decision {
	t.Helper()
	if len(res.Elems) != 4 {
		t.Fatalf("the earlier script answered %d integers, want 4", len(res.Elems))
	}
	return ratelimit.Decision{
		Allowed:    res.Elems[0].Int == 1,
		Limit:      r.Limit,
		Remaining:  res.Elems[1].Int,
		RetryAfter: time.Duration(res.Elems[2].Int) * time.Microsecond,
		ResetAfter: time.Duration(res.Elems[3].Int) * time.Microsecond,
	}
}

// TestRedisUpgradeFromHash: keys written by an earlier script (hashes
// for the bucket rules, sorted sets for log) keep their counts under
// today's script. A random trace runs through the earlier script for its
// first half and through the store for its second, every decision the
// in-memory zone's; inspection agrees with the zone at the switch; the
// bucket keys the store writes become strings; and a guard asked about a
// key of the earlier layout records no failure.
func TestRedisUpgradeFromHash(t *testing.T) {
	old := hashScript(t)
	testUpgrade(t, func(t *testing.T, c *resp.Client, prefix string, z *ratelimit.Zone, key string, now time.Time) ratelimit.Decision {
		return takeHash(t, c, old, prefix, z, key, now)
	})
}

// TestRedisUpgradeFromString: the same for the keys of the previous
// script (testdata/script-string.lua), strings without the key's
// generation and leased units: they keep their counts, and their next write
// gives them today's layout.
func TestRedisUpgradeFromString(t *testing.T) {
	b, err := os.ReadFile("testdata/script-string.lua")
	if err != nil {
		t.Fatal(err)
	}
	old := string(b)
	testUpgrade(t, func(t *testing.T, c *resp.Client, prefix string, z *ratelimit.Zone, key string, now time.Time) ratelimit.Decision {
		t.Helper()
		r := z.Rule()
		res, err := c.Do(context.Background(), "EVAL", old, "1", Key(prefix, z.Name(), key),
			strconv.FormatInt(now.UnixMicro(), 10), modeTake, packRule(r, r.Limit))
		if err != nil {
			t.Fatal(err)
		}
		return earlierDecision(t, r, res)
	})
}

// testUpgrade runs the upgrade trace, take deciding a request with the
// earlier script.
func testUpgrade(t *testing.T, take func(t *testing.T, c *resp.Client, prefix string, z *ratelimit.Zone, key string, now time.Time) ratelimit.Decision) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			addr := be.start(t)
			for _, tc := range equivalenceRules {
				t.Run(tc.name, func(t *testing.T) {
					store, client := newStore(t, addr)
					store.callerTime = true
					mem := newZone(t, tc.name, tc.rule)
					red := newZone(t, "up-"+tc.name, tc.rule)
					rng := rand.New(rand.NewSource(2))
					now := epoch
					rule := mem.Rule()
					window := int64(rule.Window / time.Microsecond)
					span := int64(rule.SubWindow / time.Microsecond)
					const steps = 400
					denied := [2]int{}
					for step := 0; step < steps; step++ {
						gap := rng.Int63n(window / (2 * rule.Limit))
						if rng.Intn(80) == 0 {
							gap = rng.Int63n(window + window/2 + span)
						}
						now = now.Add(time.Duration(gap) * time.Microsecond)
						key := string(rune('a' + rng.Intn(3)))
						upgraded := step >= steps/2
						if step == steps/2 {
							for _, k := range []string{"a", "b", "c"} {
								st, err := store.Inspect(context.Background(), red, k, now)
								if err != nil {
									t.Fatal(err)
								}
								if want := mem.Inspect(k, now); st != want {
									t.Fatalf("inspecting key %s of the previous layout: %+v, want %+v", k, st, want)
								}
							}
						}
						want := ratelimit.TakeAt(mem, key, now)
						var got ratelimit.Decision
						if upgraded {
							got = take1(t, store, now, red, key)
						} else {
							got = take(t, client, "t:", red, key, now)
						}
						if !want.Allowed {
							denied[step*2/steps]++
						}
						if got.Allowed != want.Allowed || got.Remaining != want.Remaining || got.Limit != want.Limit {
							t.Fatalf("step %d key %s (upgraded %v): redis %+v, memory %+v", step, key, upgraded, got, want)
						}
						if got.ResetAfter != want.ResetAfter.Truncate(time.Microsecond) && got.ResetAfter != want.ResetAfter {
							t.Fatalf("step %d key %s (upgraded %v): reset: redis %v, memory %v", step, key, upgraded, got.ResetAfter, want.ResetAfter)
						}
						if d := got.RetryAfter - want.RetryAfter; d < -2*time.Microsecond || d > 2*time.Microsecond {
							t.Fatalf("step %d key %s (upgraded %v): retry: redis %v, memory %v", step, key, upgraded, got.RetryAfter, want.RetryAfter)
						}
					}
					if denied[0] == 0 || denied[1] == 0 {
						t.Fatalf("denials before and after the upgrade: %v; the trace tests too little", denied)
					}
					if rule.Algorithm != ratelimit.Log {
						typ, err := client.Do(context.Background(), "TYPE", Key("t:", red.Name(), "a"))
						if err != nil || typ.Str != "string" {
							t.Fatalf("TYPE after the upgrade: %q, %v; want string", typ.Str, err)
						}
					}
					// A guard on a key still of the previous layout.
					take(t, client, "t:", red, "g", now)
					g := newGuard(t, store, guard.Options{})
					if d := take1(t, g, now, red, "g"); !d.Allowed {
						t.Fatalf("the guard on a key of the previous layout: %+v, want allowed", d)
					}
					if st := g.Stats(); st.Failures != 0 || st.Open {
						t.Fatalf("the guard on a key of the previous layout: %+v, want no failure", st)
					}
				})
			}
		})
	}
}

// TestRedisUpgradeLogMixed: the previous script (testdata/script-string.lua)
// and today's share a log key while instances upgrade, every request at one
// microsecond: each counts the other's entries, names its own beside them,
// and each refund takes back one entry, today's its own. On redis-server
// only: the previous script reads a name of today's with tonumber(nil),
// which Redis's Lua answers nil and miniredis's refuses.
func TestRedisUpgradeLogMixed(t *testing.T) {
	b, err := os.ReadFile("testdata/script-string.lua")
	if err != nil {
		t.Fatal(err)
	}
	old := string(b)
	ctx := context.Background()
	now := epoch.Add(time.Second)
	r := ratelimit.Rule{Window: time.Minute, Limit: 3, Algorithm: ratelimit.Log}
	for _, be := range backends {
		if be.name == "miniredis" {
			continue
		}
		t.Run(be.name, func(t *testing.T) {
			s, c := newStore(t, be.start(t))
			s.callerTime = true
			z := newZone(t, "mixed", r)
			rule := z.Rule()
			key, at := Key(s.prefix, z.Name(), "k"), strconv.FormatInt(now.UnixMicro(), 10)
			items := []ratelimit.Item{{Zone: z, Key: "k", Refundable: true}}
			ours := reserve(t, s, now, items, true)
			res, err := c.Do(ctx, "EVAL", old, "1", key, at, modeReserve, packRule(rule, rule.Limit))
			if err != nil || len(res.Elems) < 5 || res.Elems[0].Int != 1 || res.Elems[1].Int != 1 {
				t.Fatalf("the previous script's reservation: %+v, %v; want admitted, 1 remaining", res, err)
			}
			take1(t, s, now, z, "k")
			reserve(t, s, now, items, false)
			if _, err := c.Do(ctx, "EVAL", old, "1", key, "0", modeRefund, withInt(packRule(rule, rule.Limit), res.Elems[4].Int)); err != nil {
				t.Fatal(err)
			}
			if err := s.Refund(ctx, items, ours); err != nil {
				t.Fatal(err)
			}
			if st, err := s.Inspect(ctx, z, "k", now); err != nil || st.Remaining != 2 {
				t.Fatalf("after both refunds: %+v, %v; want 2 remaining", st, err)
			}
			if n, err := c.Do(ctx, "ZCARD", key); err != nil || n.Int != 1 {
				t.Fatalf("ZCARD %d, %v after both refunds; want 1 entry", n.Int, err)
			}
		})
	}
}
