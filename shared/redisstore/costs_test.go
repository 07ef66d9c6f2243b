package redisstore

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// costCalls is how many decisions each of TestScriptCosts's figures is
// the mean of: the counts are whole per decision, so a few suffice.
const costCalls = 50

// scriptCalls are the commands that run the script: a decision's script
// calls. Every other command the server counts, but for the ones a client
// sends around them (notOfScript), the script ran.
var scriptCalls = map[string]bool{"evalsha": true, "eval": true, "evalsha_ro": true, "eval_ro": true}

var notOfScript = map[string]bool{"info": true, "ping": true, "hello": true, "client|setinfo": true,
	"client|setname": true, "select": true, "auth": true, "script|load": true, "memory|usage": true, "strlen": true}

// TestScriptCosts prints what each mode of the script costs Redis, as
// scripts/costs records it in docs/costs.md: script calls and the Redis
// commands the script runs a decision (INFO commandstats before and after
// costCalls decisions), the Go allocations of a decision through
// shared/resp, and MEMORY USAGE of the bench's busy IPv4 key. It checks
// that each mode did what its figure names (admitted, denied, leased,
// refunded, reset); `go run ./scripts/costs` compares the figures.
func TestScriptCosts(t *testing.T) {
	srv := redistest.Start(t)
	store, client := newStore(t, srv.Addr())
	ctx := context.Background()
	rule := ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 1 << 30}
	z := newZone(t, "api", rule)
	tight := newZone(t, "tight", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 5})
	now := time.Now()

	// take runs one decision of it and returns it, failing on an error.
	take := func(it ratelimit.Item) ratelimit.Decision {
		t.Helper()
		out := make([]ratelimit.Decision, 1)
		if _, err := store.Take(ctx, now, []ratelimit.Item{it}, out); err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	// per runs do costCalls times (i counting from 0), checks each, and
	// prints the script calls and commands a call.
	per := func(name string, do func(i int) bool) {
		t.Helper()
		before := redistest.Calls(t, srv.Addr())
		for i := 0; i < costCalls; i++ {
			if !do(i) {
				t.Fatalf("%s: call %d did not do what the figure measures", name, i)
			}
		}
		calls, cmds := 0.0, 0.0
		var which []string
		for cmd, n := range redistest.Calls(t, srv.Addr()) {
			d := float64(n - before[cmd])
			switch {
			case d == 0:
			case scriptCalls[cmd]:
				calls += d
			case !notOfScript[cmd]:
				cmds += d
				which = append(which, cmd+" "+perCall(d))
			}
		}
		slices.Sort(which)
		t.Logf("cost: script calls a decision, %s = %s", name, perCall(calls))
		t.Logf("cost: Redis commands a decision, %s = %s (%s)", name, perCall(cmds), strings.Join(which, ", "))
	}

	// The script is loaded and the busy keys exist before anything counts.
	busy := ratelimit.Item{Zone: z, Key: "203.0.113.77"}
	take(busy)
	full := ratelimit.Item{Zone: tight, Key: "203.0.113.78"}
	for i := 0; i < 5; i++ {
		take(full)
	}

	per("take admitted, busy key", func(int) bool { return take(busy).Allowed })
	per("take admitted, fresh key", func(i int) bool {
		return take(ratelimit.Item{Zone: z, Key: "fresh-" + strconv.Itoa(i)}).Allowed
	})
	per("take denied, busy key", func(int) bool { return !take(full).Allowed })
	reserved := make([]ratelimit.Decision, costCalls)
	per("reserve, busy key", func(i int) bool {
		reserved[i] = take(ratelimit.Item{Zone: z, Key: busy.Key, Refundable: true})
		return reserved[i].Allowed && reserved[i].Receipt.At != 0
	})
	per("refund, busy key", func(i int) bool {
		it := []ratelimit.Item{{Zone: z, Key: busy.Key, Refundable: true}}
		return store.Refund(ctx, it, reserved[i:i+1]) == nil
	})
	lease := ratelimit.Item{Zone: z, Key: "203.0.113.79", Lease: 10}
	take(lease)
	per("lease, busy key", func(int) bool {
		d := take(lease)
		return d.Allowed && d.Leased > 0
	})
	for i := 0; i < costCalls; i++ {
		take(ratelimit.Item{Zone: z, Key: "reset-" + strconv.Itoa(i)})
	}
	per("reset, busy key", func(i int) bool {
		had, err := store.Forget(ctx, z, "reset-"+strconv.Itoa(i), now, 0)
		return err == nil && had
	})

	// A decision's Go allocations, through shared/resp, on the busy key.
	items, out := []ratelimit.Item{busy}, make([]ratelimit.Decision, 1)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := store.Take(ctx, now, items, out); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("cost: compiled allocations a decision, redisstore.Store.Take through shared/resp = %s", strconv.FormatFloat(allocs, 'f', -1, 64))

	// The busy key of scripts/bench-redis.sh: 50 requests in each of 11
	// sub-windows of 6 s, on the caller's clock.
	store.prefix, store.callerTime = "rl:", true
	for i := 0; i <= 10; i++ {
		for j := 0; j < 50; j++ {
			take1(t, store, epoch.Add(time.Duration(i)*6*time.Second), z, busy.Key)
		}
	}
	size, err := client.Do(ctx, "MEMORY", "USAGE", Key("rl:", "api", busy.Key))
	if err != nil || size.Int <= 0 {
		t.Fatalf("MEMORY USAGE: %d, %v", size.Int, err)
	}
	t.Logf("cost: bytes a busy key, IPv4, all 11 sub-windows written (MEMORY USAGE) = %d", size.Int)
}

// perCall formats n commands as a figure a call of TestScriptCosts.
func perCall(n float64) string {
	return strconv.FormatFloat(n/costCalls, 'f', -1, 64)
}
