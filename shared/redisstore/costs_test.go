package redisstore

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// costCalls is how many decisions each of TestScriptCosts's figures is
// the mean of: the counts are whole per decision, so a few suffice.
// Instructions move with where the Lua collector's steps fall, so that
// their mean is of more (cgCalls).
const (
	costCalls = 50
	cgCalls   = 400
)

// scriptCalls are the commands that run the script: a decision's script
// calls. Every other command the server counts, but for the ones a client
// sends around them (notOfScript), the script ran.
var scriptCalls = map[string]bool{"evalsha": true, "eval": true, "evalsha_ro": true, "eval_ro": true}

var notOfScript = map[string]bool{"info": true, "ping": true, "hello": true, "client|setinfo": true,
	"client|setname": true, "select": true, "auth": true, "script|load": true, "memory|usage": true, "strlen": true}

// A costMode is one of the script's modes as TestScriptCosts measures it:
// setup runs before the count starts, do runs once a decision counted and
// reports whether call i did what the figure names. after, when set, runs
// once the count is over and reports whether the calls did what it
// names, where their replies do not say.
type costMode struct {
	name  string
	setup func()
	do    func(i int) bool
	after func() bool
}

// costModes returns the modes of the script, decided through store: take
// admitted (a busy key and fresh ones), take denied, reserve, refund,
// lease and reset, with a slot, in a zone with a ban, and a log zone's
// take, reserve and refund, each n decisions. The store counts at the server's
// time, as in production, in sub-windows of an hour, so that a run
// rarely straddles one's end: in sub-windows of 6 s, refund's
// instructions fell in two groups 4% apart from run to run.
func costModes(t *testing.T, store *Store, n int) []costMode {
	ctx := context.Background()
	z := newZone(t, "api", ratelimit.Rule{Window: 10 * time.Hour, SubWindow: time.Hour, Limit: 1 << 30})
	tight := newZone(t, "tight", ratelimit.Rule{Window: 10 * time.Hour, SubWindow: time.Hour, Limit: 5})
	now := time.Now()
	take := func(it ratelimit.Item) ratelimit.Decision {
		t.Helper()
		out := make([]ratelimit.Decision, 1)
		if _, err := store.Take(ctx, now, []ratelimit.Item{it}, out); err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	busy := ratelimit.Item{Zone: z, Key: "203.0.113.77"}
	full := ratelimit.Item{Zone: tight, Key: "203.0.113.78"}
	lease := ratelimit.Item{Zone: z, Key: "203.0.113.79", Lease: 10}
	reserved := make([]ratelimit.Decision, n)
	// A zone with a ban: its calls name the ban key too and take the
	// script's general path.
	banz := newZone(t, "banz", ratelimit.Rule{Window: 10 * time.Hour, SubWindow: time.Hour, Limit: 1 << 30}, ratelimit.Options{Ban: time.Hour})
	bantight := newZone(t, "bantight", ratelimit.Rule{Window: 10 * time.Hour, SubWindow: time.Hour, Limit: 1}, ratelimit.Options{Ban: time.Hour})
	banBusy := ratelimit.Item{Zone: banz, Key: "203.0.113.80"}
	banned := ratelimit.Item{Zone: bantight, Key: "203.0.113.81"}
	// A zone with in_flight beside its rate: the slot taken in the
	// decision's call (the full script's SLOT), its set holding every
	// slot taken before it (nothing releases them here).
	slotz := newZone(t, "slotz", ratelimit.Rule{Window: 10 * time.Hour, SubWindow: time.Hour, Limit: 1 << 30})
	takeSlot := func(key string, n int64, member string) *ratelimit.Slot {
		t.Helper()
		slot := &ratelimit.Slot{Set: SlotsKey(store.prefix, "slotz", key), N: n, TTL: time.Hour, Member: member}
		out := make([]ratelimit.Decision, 1)
		if _, err := store.TakeSlot(ctx, now, []ratelimit.Item{{Zone: slotz, Key: key}}, out, slot); err != nil {
			t.Fatal(err)
		}
		return slot
	}
	// A log zone: a sorted set of the admitted timestamps, on the script's
	// general path. Its busy key holds every decision of a run (at most
	// 801), below the log's largest limit.
	logz := newZone(t, "logz", ratelimit.Rule{Window: 10 * time.Hour, Limit: 1024, Algorithm: ratelimit.Log})
	logBusy := ratelimit.Item{Zone: logz, Key: "203.0.113.90"}
	logReserved := make([]ratelimit.Decision, n)
	return []costMode{
		{"take admitted, busy key", func() { take(busy) }, func(int) bool { return take(busy).Allowed }, nil},
		{"take admitted, fresh key", func() {}, func(i int) bool {
			return take(ratelimit.Item{Zone: z, Key: "fresh-" + strconv.Itoa(i)}).Allowed
		}, nil},
		{"take denied, busy key", func() {
			for i := 0; i < 5; i++ {
				take(full)
			}
		}, func(int) bool { return !take(full).Allowed }, nil},
		{"reserve, busy key", func() {}, func(i int) bool {
			reserved[i] = take(ratelimit.Item{Zone: z, Key: busy.Key, Refundable: true})
			return reserved[i].Allowed && reserved[i].Receipt.At != 0
		}, nil},
		{"refund, busy key", func() {}, func(i int) bool {
			it := []ratelimit.Item{{Zone: z, Key: busy.Key, Refundable: true}}
			return store.Refund(ctx, it, reserved[i:i+1]) == nil
		}, nil},
		{"lease, busy key", func() { take(lease) }, func(int) bool {
			d := take(lease)
			return d.Allowed && d.Leased > 0
		}, nil},
		{"reset, busy key", func() {
			for i := 0; i < n; i++ {
				take(ratelimit.Item{Zone: z, Key: "reset-" + strconv.Itoa(i)})
			}
		}, func(i int) bool {
			had, err := store.Forget(ctx, z, "reset-"+strconv.Itoa(i), now, 0)
			return err == nil && had
		}, nil},
		{"slot with the decision, take admitted, busy key", func() { takeSlot("203.0.113.82", 1<<30, "warm") }, func(i int) bool {
			return takeSlot("203.0.113.82", 1<<30, "m"+strconv.Itoa(i)).State == ratelimit.SlotTaken
		}, nil},
		{"slot with the decision, set full", func() { takeSlot("203.0.113.83", 1, "held") }, func(i int) bool {
			return takeSlot("203.0.113.83", 1, "m"+strconv.Itoa(i)).State == ratelimit.SlotFull
		}, nil},
		{"ban zone, take admitted, busy key", func() { take(banBusy) }, func(int) bool { return take(banBusy).Allowed }, nil},
		{"ban zone, take denied, starts the ban", func() {
			for i := 0; i < n; i++ {
				take(ratelimit.Item{Zone: bantight, Key: "ban-" + strconv.Itoa(i)})
			}
		}, func(i int) bool {
			d := take(ratelimit.Item{Zone: bantight, Key: "ban-" + strconv.Itoa(i)})
			return !d.Allowed && d.RetryAfter == time.Hour
		}, nil},
		{"ban zone, take of a banned key", func() {
			take(banned)
			take(banned)
		}, func(int) bool {
			d := take(banned)
			return !d.Allowed && d.RetryAfter < time.Hour && d.RetryAfter > 59*time.Minute
		}, nil},
		{"log zone, take admitted, busy key", func() { take(logBusy) }, func(int) bool { return take(logBusy).Allowed }, nil},
		{"log zone, reserve, busy key", func() {}, func(i int) bool {
			logReserved[i] = take(ratelimit.Item{Zone: logz, Key: logBusy.Key, Refundable: true})
			return logReserved[i].Allowed && logReserved[i].Receipt.At != 0
		}, nil},
		{"log zone, refund, busy key", func() {}, func(i int) bool {
			it := []ratelimit.Item{{Zone: logz, Key: logBusy.Key, Refundable: true}}
			return store.Refund(ctx, it, logReserved[i:i+1]) == nil
		}, nil},
	}
}

// TestScriptCosts prints what each mode of the script costs Redis, as
// scripts/costs records it in docs/costs.md: script calls and the Redis
// commands the script runs a decision (INFO commandstats before and after
// costCalls decisions), the Go allocations of a decision through
// shared/resp, MEMORY USAGE of the bench's busy IPv4 key, and, where
// valgrind is installed, the instructions a decision takes in Redis's
// evalShaCommand (callgrind). The same for the slots script (slots.lua),
// a call of Slots in each of slotCostModes' modes: its commands and its
// instructions a call. It checks that each mode did what its figure names
// (admitted, denied, leased, refunded, reset, released, renewed); `go run
// ./scripts/costs` compares the figures.
func TestScriptCosts(t *testing.T) {
	srv := redistest.Start(t)
	store, client := newStore(t, srv.Addr())
	for _, m := range costModes(t, store, costCalls) {
		calls, cmds, which := commands(t, srv.Addr(), m)
		t.Logf("cost: script calls a decision, %s = %s", m.name, perCall(calls))
		t.Logf("cost: Redis commands a decision, %s = %s (%s)", m.name, perCall(cmds), which)
	}
	slots, err := NewSlots(client, "t:")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range slotCostModes(t, slots, costCalls) {
		calls, cmds, which := commands(t, srv.Addr(), m)
		if calls != costCalls {
			t.Fatalf("%s: %v script calls for %d calls of Slots, want one each", m.name, calls, costCalls)
		}
		t.Logf("cost: Redis commands a slots call, %s = %s (%s)", m.name, perCall(cmds), which)
	}

	// A decision's Go allocations, through shared/resp, on a busy key.
	ctx := context.Background()
	z := newZone(t, "allocs", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 1 << 30})
	items, out := []ratelimit.Item{{Zone: z, Key: "203.0.113.77"}}, make([]ratelimit.Decision, 1)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := store.Take(ctx, time.Now(), items, out); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("cost: compiled allocations a decision, redisstore.Store.Take through shared/resp = %s", strconv.FormatFloat(allocs, 'f', -1, 64))

	// The busy key of scripts/bench-redis.sh: 50 requests in each of 11
	// sub-windows of 6 s, on the caller's clock.
	store.prefix, store.callerTime = "rl:", true
	z = newZone(t, "api", ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 1000})
	for i := 0; i <= 10; i++ {
		for j := 0; j < 50; j++ {
			take1(t, store, epoch.Add(time.Duration(i)*6*time.Second), z, "203.0.113.77")
		}
	}
	size, err := client.Do(ctx, "MEMORY", "USAGE", Key("rl:", "api", "203.0.113.77"))
	if err != nil || size.Int <= 0 {
		t.Fatalf("MEMORY USAGE: %d, %v", size.Int, err)
	}
	t.Logf("cost: bytes a busy key, IPv4, all 11 sub-windows written (MEMORY USAGE) = %d", size.Int)

	scriptInstructions(t)
}

// commands runs m's setup, then costCalls calls of m, and returns the
// script calls and the other commands the server at addr counted
// meanwhile, and those commands by name, each a call.
func commands(t *testing.T, addr string, m costMode) (calls, cmds float64, which string) {
	t.Helper()
	m.setup()
	before := redistest.Calls(t, addr)
	runMode(t, m, costCalls)
	var names []string
	for cmd, n := range redistest.Calls(t, addr) {
		d := float64(n - before[cmd])
		switch {
		case d == 0:
		case scriptCalls[cmd]:
			calls += d
		case !notOfScript[cmd]:
			cmds += d
			names = append(names, cmd+" "+perCall(d))
		}
	}
	slices.Sort(names)
	checkAfter(t, m)
	return calls, cmds, strings.Join(names, ", ")
}

// scriptInstructions prints the instructions a decision of each mode
// takes in a redis-server run by valgrind's callgrind, inside
// evalShaCommand only: the script and the commands it calls, which the
// machine's load does not change. Without valgrind it prints that it
// skipped them.
func scriptInstructions(t *testing.T) {
	vg, err1 := exec.LookPath("valgrind")
	ctl, err2 := exec.LookPath("callgrind_control")
	if err1 != nil || err2 != nil {
		t.Logf("cost: callgrind instructions a decision = skipped (valgrind is not installed)")
		t.Logf("cost: callgrind instructions a slots call = skipped (valgrind is not installed)")
		return
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(vg, "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=evalShaCommand",
		"--callgrind-out-file="+filepath.Join(dir, "cg.%p"), redistest.Binary(t),
		"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	c := newClient(t, resp.Options{Addrs: []string{addr}, ReadTimeout: 10 * time.Second})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := c.Do(context.Background(), "PING"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server under callgrind: no answer in a minute")
		}
	}
	store, err := New(c, Settings{KeyPrefix: "t:"})
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	control := func(arg string) {
		if out, err := exec.Command(ctl, arg, pid).CombinedOutput(); err != nil {
			t.Fatalf("callgrind_control %s: %v\n%s", arg, err, out)
		}
	}
	instructions := func(m costMode) int64 {
		m.setup()
		control("--zero")
		runMode(t, m, cgCalls)
		control("--dump")
		checkAfter(t, m)
		return (lastDump(t, dir) + cgCalls/2) / cgCalls
	}
	for _, m := range costModes(t, store, cgCalls) {
		t.Logf("cost: callgrind instructions a decision, %s = %d", m.name, instructions(m))
	}
	slots, err := NewSlots(c, "t:")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range slotCostModes(t, slots, cgCalls) {
		t.Logf("cost: callgrind instructions a slots call, %s = %d", m.name, instructions(m))
	}
}

// lastDump returns the instructions of the newest callgrind dump in dir.
func lastDump(t *testing.T, dir string) int64 {
	files, err := filepath.Glob(filepath.Join(dir, "cg.*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no callgrind dump in %s: %v", dir, err)
	}
	newest, at := "", time.Time{}
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && !st.ModTime().Before(at) {
			newest, at = f, st.ModTime()
		}
	}
	text, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(text), "\n") {
		if v, ok := strings.CutPrefix(line, "summary: "); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", newest, line, err)
			}
			return n
		}
	}
	t.Fatalf("%s holds no summary line", newest)
	return 0
}

// runMode runs n calls of m, failing t on one that did not do what m
// names.
func runMode(t *testing.T, m costMode, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if !m.do(i) {
			t.Fatalf("%s: call %d did not do what the figure measures", m.name, i)
		}
	}
}

// checkAfter fails t when m's calls, all made, did not do what m names.
func checkAfter(t *testing.T, m costMode) {
	t.Helper()
	if m.after != nil && !m.after() {
		t.Fatalf("%s: the calls did not do what the figure measures", m.name)
	}
}

// perCall formats n commands as a figure a call of TestScriptCosts.
func perCall(n float64) string {
	return strconv.FormatFloat(n/costCalls, 'f', -1, 64)
}
