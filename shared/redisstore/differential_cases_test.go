package redisstore

import (
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// Traces the random differential found and shrank, kept so that each
// disagreement has a short replay that does not depend on the generator.

type diffCase struct {
	name  string
	zones []diffZone
	steps []diffStep
}

func us(n int64) time.Duration { return time.Duration(n) * time.Microsecond }

func one(at int64, zone int, key string) diffStep {
	return diffStep{at: at, items: []diffItem{{zone, key}}}
}

func multi(at int64, items []diffItem) diffStep { return diffStep{at: at, items: items} }

func runDiffCases(t *testing.T, forward bool, cases []diffCase) {
	h := newDiffHarness(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.zones {
				if err := tc.zones[i].rule.Normalize(); err != nil {
					t.Fatal(err)
				}
			}
			if f := h.replay(t, tc.zones, tc.steps, forward); f != nil {
				t.Errorf("step %d: %s: %s", f.step, f.kind, f.msg)
			}
		})
	}
}

// TestDifferentialCases: forward time, and the refund cases.
func TestDifferentialCases(t *testing.T) {
	runDiffCases(t, true, append([]diffCase{{
		// The script's slack of 1e-9 on the count is coarser than the
		// count's resolution once T is over about 1e9µs: the leaving
		// sub-window's weight in the last microseconds of a sub-window is
		// rounded away, and the script admits a request that does not fit.
		name:  "script admits over the limit with a 12h sub-window",
		zones: []diffZone{{"z1", ratelimit.Rule{Window: us(345600000000), SubWindow: us(43200000000), Limit: 5, Cost: 2}, false, 0}},
		steps: []diffStep{one(1770130800000333, 0, "b"), one(1770145099547968, 0, "b"), one(1770476399999999, 0, "b")},
	}, {
		name:  "script's Remaining rounded up with a 7h sub-window",
		zones: []diffZone{{"z0", ratelimit.Rule{Window: us(352800000000), SubWindow: us(25200000000), Limit: 47, Cost: 3}, false, 0}},
		steps: []diffStep{one(1770778800000001, 0, "c"), one(1771156799999999, 0, "c")},
	}, {
		// The zone's weighted count is rate*(end-t) with rate =
		// leaving*(1/T): at a sub-window's first instant, where the weight
		// is exactly 1, it comes out one ulp over the integer, and the zone
		// denies a request that fits exactly.
		name:  "zone denies a request that fits exactly at a sub-window boundary",
		zones: []diffZone{{"z0", ratelimit.Rule{Window: us(6000), SubWindow: us(6000), Limit: 28, Cost: 7}, false, 0}},
		steps: []diffStep{one(1760558300016001, 0, "a"), one(1760558300016001, 0, "a"), one(1760558300017350, 0, "a"), one(1760558300022000, 0, "a")},
	}, {
		name:  "zone's RetryAfter a nanosecond late on a whole microsecond",
		zones: []diffZone{{"z1", ratelimit.Rule{Window: us(10080), SubWindow: us(2520), Limit: 21, Cost: 6}, false, 0}},
		steps: []diffStep{one(1760146462902750, 0, "b"), one(1760146462902781, 0, "b"), one(1760146462911000, 0, "b"), one(1760146462911240, 0, "b")},
	}}, refundCases...))
}

// e is a time on every sub-window boundary of the refund cases.
const e = int64(1760000000000000)

// refundCases reserve and refund in forward time, each decision checked
// against the exact reference too.
var refundCases = []diffCase{{
	// The third request is denied, the refund of the first makes room
	// for one, and a denied request has nothing to give back.
	name:  "refund in the current sub-window",
	zones: []diffZone{{"z0", ratelimit.Rule{Window: us(1000), Limit: 2, Algorithm: ratelimit.Fixed}, true, 0}},
	steps: []diffStep{one(e+100, 0, "a"), one(e+200, 0, "a"), one(e+300, 0, "a"), refundOf(0),
		one(e+400, 0, "a"), one(e+500, 0, "a"), refundOf(5), one(e+600, 0, "a")},
}, {
	// At +12.5ms the sliding count is 2 + 1*0.5, the strict one 2 + 1:
	// the refund of the request of sub-window 10, the leaving one,
	// makes room for one more in each.
	name: "refund in the leaving sub-window",
	zones: []diffZone{
		{"z0", ratelimit.Rule{Window: us(2000), SubWindow: us(1000), Limit: 3}, true, 0},
		{"z1", ratelimit.Rule{Window: us(2000), SubWindow: us(1000), Limit: 3, Algorithm: ratelimit.Strict}, true, 0},
	},
	steps: []diffStep{
		multi(e+10000, []diffItem{{0, "a"}, {1, "a"}}), multi(e+11000, []diffItem{{0, "a"}, {1, "a"}}),
		multi(e+12000, []diffItem{{0, "a"}, {1, "a"}}), one(e+12500, 0, "a"), one(e+12500, 1, "a"),
		refundOf(0), one(e+12500, 0, "a"), one(e+12500, 1, "a"), one(e+12600, 0, "a"), one(e+12600, 1, "a"),
	},
}, {
	// Sub-window 10 left the window, and sub-window 13 (7 for Fixed)
	// reuses its cell: the late refund must give nothing back. A Log
	// entry out of the window is gone.
	name: "refund after the sub-window left the window",
	zones: []diffZone{
		{"z0", ratelimit.Rule{Window: us(2000), SubWindow: us(1000), Limit: 2}, true, 0},
		{"z1", ratelimit.Rule{Window: us(1000), Limit: 2, Algorithm: ratelimit.Fixed}, true, 0},
		{"z2", ratelimit.Rule{Window: us(1000), Limit: 2, Algorithm: ratelimit.Log}, true, 0},
	},
	steps: []diffStep{
		one(e+5000, 1, "b"), one(e+6000, 2, "c"), one(e+10000, 0, "a"),
		one(e+13000, 0, "a"), one(e+13000, 0, "a"), one(e+13000, 1, "b"), one(e+13000, 1, "b"),
		one(e+13000, 2, "c"), one(e+13000, 2, "c"),
		refundOf(2), refundOf(0), refundOf(1),
		one(e+13100, 0, "a"), one(e+13100, 1, "b"), one(e+13100, 2, "c"),
	},
}, {
	// A refund gives back the cost: two units of the request's
	// sub-window, or the two entries of its time; two requests at one
	// time, one refunded, then another at that time.
	name: "cost 2",
	zones: []diffZone{
		{"z0", ratelimit.Rule{Window: us(4000), SubWindow: us(1000), Limit: 5, Algorithm: ratelimit.Strict, Cost: 2}, true, 0},
		{"z1", ratelimit.Rule{Window: us(4000), Limit: 5, Algorithm: ratelimit.Log, Cost: 2}, true, 0},
	},
	steps: []diffStep{
		multi(e+1000, []diffItem{{0, "a"}, {1, "a"}}), multi(e+1500, []diffItem{{0, "a"}, {1, "a"}}),
		one(e+1600, 0, "a"), one(e+1600, 1, "a"), refundOf(1),
		one(e+1700, 0, "a"), one(e+1700, 1, "a"), one(e+1800, 0, "a"), one(e+1800, 1, "a"),
		one(e+2000, 1, "b"), one(e+2000, 1, "b"), refundOf(9), one(e+2000, 1, "b"), one(e+2000, 1, "b"),
	},
}, {
	// The script names a log member "<t>.<n>", n the count in the
	// window: after the refund of an older entry the count fell, and
	// the next request at the newest time gets the name of a member
	// that is there. ZADD then adds nothing: the request is admitted
	// and not counted, and the key admits past its limit.
	name:  "log: a refund, then requests at the newest entry's time",
	zones: []diffZone{{"z0", ratelimit.Rule{Window: us(1000), Limit: 3, Algorithm: ratelimit.Log}, true, 0}},
	steps: []diffStep{one(e+100, 0, "a"), one(e+200, 0, "a"), refundOf(0),
		one(e+200, 0, "a"), one(e+200, 0, "a"), one(e+200, 0, "a")},
}}

// TestDifferentialClockBackCases: after a step back both stores count as
// if in the newest sub-window written (the script does; the zone clamps to
// the newest it has seen).
func TestDifferentialClockBackCases(t *testing.T) {
	runDiffCases(t, false, []diffCase{{
		name:  "a denied request moves the zone's newest sub-window",
		zones: []diffZone{{"z1", ratelimit.Rule{Window: us(6480000000), SubWindow: us(720000000), Limit: 5, Cost: 3}, false, 0}},
		steps: []diffStep{one(1760099157356001, 0, "c"), one(1760105519999999, 0, "c"), one(1760099017997277, 0, "c")},
	}, {
		name: "a check another rule denied creates the zone's key",
		zones: []diffZone{
			{"z0", ratelimit.Rule{Window: us(539000000), SubWindow: us(49000000), Limit: 41}, false, 0},
			{"z1", ratelimit.Rule{Window: us(39000000), SubWindow: us(39000000), Limit: 10, Algorithm: ratelimit.Fixed, Cost: 6}, false, 0},
		},
		steps: []diffStep{one(1760005030000000, 1, "a"), multi(1760004898099182, []diffItem{{0, "a"}, {1, "a"}}), one(1760003966000000, 0, "a")},
	}, {
		name: "log: a check another rule denied sets the newest timestamp",
		zones: []diffZone{
			{"z1", ratelimit.Rule{Window: us(6), SubWindow: us(6), Limit: 3, Algorithm: ratelimit.Log}, false, 0},
			{"z2", ratelimit.Rule{Window: us(27), SubWindow: us(27), Limit: 10, Algorithm: ratelimit.Log}, false, 0},
		},
		steps: []diffStep{
			one(1760884271009617, 0, "a"), one(1760884271009617, 0, "a"), one(1760884271009616, 0, "a"),
			multi(1760884271009617, []diffItem{{1, "b"}, {0, "a"}}), one(1760884271009307, 1, "b"), one(1760884271009337, 1, "b"),
		},
	}, {
		// The denied check rolled the zone's ring forward and cleared the
		// admitted sub-window: after the step back the zone counts 0 where
		// the script counts 4.
		name: "a check another rule denied clears the zone's counts",
		zones: []diffZone{
			{"z0", ratelimit.Rule{Window: us(7560000000), SubWindow: us(2520000000), Limit: 19, Cost: 4}, false, 0},
			{"z2", ratelimit.Rule{Window: us(1680), SubWindow: us(120), Limit: 9, Algorithm: ratelimit.Strict, Cost: 6}, false, 0},
		},
		steps: []diffStep{one(1760193081760080, 0, "a"), one(1760204594032468, 1, "a"),
			multi(1760204594032470, []diffItem{{1, "a"}, {0, "a"}}), one(1760199840000000, 0, "a")},
	}, {
		name:  "a denial cached at a later time is reused",
		zones: []diffZone{{"z1", ratelimit.Rule{Window: us(78000000), SubWindow: us(6000000), Limit: 3, Algorithm: ratelimit.Strict}, false, 0}},
		steps: []diffStep{one(1760894376000002, 0, "a"), one(1760894376000002, 0, "a"), one(1760894381999999, 0, "a"),
			one(1760894382000002, 0, "a"), one(1760730106090139, 0, "a")},
	}, {
		// The member-name reuse after a step back: the requests count at
		// the newest entry's time, after a refund of an older entry.
		name:  "log: a refund, then requests at the same time after a clock step back",
		zones: []diffZone{{"z0", ratelimit.Rule{Window: us(1000), Limit: 3, Algorithm: ratelimit.Log}, true, 0}},
		steps: []diffStep{one(e+10000, 0, "a"), one(e+10500, 0, "a"), refundOf(0),
			one(e+10200, 0, "a"), one(e+10200, 0, "a"), one(e+10200, 0, "a")},
	}, {
		// After a step back the script counts a request at its own time
		// (9.8ms), past the newest score its log holds (9.6ms); the zone at
		// the newest time it admitted (10.5ms), whose entry the refund
		// removed. At 10.9ms the zone still counts that request.
		name:  "log: a refund of the newest entry, then a clock step back",
		zones: []diffZone{{"z0", ratelimit.Rule{Window: us(1000), Limit: 3, Algorithm: ratelimit.Log}, true, 0}},
		steps: []diffStep{one(e+9600, 0, "a"), one(e+10500, 0, "a"), refundOf(1), one(e+9800, 0, "a"), one(e+10900, 0, "a")},
	}, {
		// A refund leaves the key counting nothing: the zone then counts a
		// request after a step back at its own time (headTime), the script
		// in the key's newest sub-window, which it still holds.
		name: "a refund empties the key, then a clock step back",
		zones: []diffZone{
			{"z0", ratelimit.Rule{Window: us(4000), SubWindow: us(1000), Limit: 5}, true, 0},
			{"z1", ratelimit.Rule{Window: us(1000), Limit: 2, Algorithm: ratelimit.Fixed}, true, 0},
		},
		steps: []diffStep{one(e+20000, 0, "a"), refundOf(0), one(e+15500, 0, "a"),
			one(e+9500, 1, "b"), one(e+9500, 1, "b"), one(e+10100, 1, "b"), refundOf(6), one(e+9600, 1, "b"), one(e+9600, 1, "b")},
	}})
}
