package redisstore

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestDifferential: random traces, one per seed, each on a fresh set of
// zones and keys, give the same decisions in memory (TakeAll) and in Redis
// (the script, one call per request): every algorithm, random windows,
// sub-windows, limits and costs, single- and multi-rule requests, time
// moving forward by random steps and onto the boundaries the decisions
// name. Redis keys expire in trace time at the TTL the script set, and no
// TTL may end before the zone stops counting the key. Every decision must
// also equal the exact one (exactTake), at each store's resolution: the
// zone's RetryAfter to the nanosecond, the script's to the microsecond.
//
// Some zones reserve (count_status): their items are Refundable, and the
// response of an admitted request comes a random number of requests later
// (0 to about 140, so that responses overlap other requests and come
// after their sub-window moved on or left the window): a settled status
// the zone does not count refunds it (Memory.Refund in memory, one refund
// call in Redis, each from its own receipt), a counted status, an abort
// or a client gone keeps it. Both stores must name the same sub-window
// (log time) in their receipts, and the exact reference gives back one
// admission of that sub-window (that time) if it still holds one: Redis
// must have found the count if and only if the reference held it, where
// it still counts.
//
// Knobs (environment): WINDOWLIMIT_DIFF_SEED, the first seed (default 1;
// "time" picks one from the clock), WINDOWLIMIT_DIFF_SEEDS, how many
// (default 50, 10 with -short), WINDOWLIMIT_DIFF_STEPS, requests per seed
// (default 400), WINDOWLIMIT_DIFF_SHRINK, how many failing seeds are
// shrunk to a short trace (default 3). A failure prints the command that
// replays its seed.
func TestDifferential(t *testing.T) { runDifferential(t, false) }

// TestDifferentialClockBack is TestDifferential with the clock stepping
// back at random moments, without key expiry (Redis cannot undelete a key
// when a clock steps back). Both stores must then count as if still in the
// newest sub-window written (or at the newest timestamp, for Log); a
// denied request changes no state, and a denial cached at a later time
// than now is not reused.
func TestDifferentialClockBack(t *testing.T) { runDifferential(t, true) }

type diffConfig struct {
	first                int64
	seeds, steps, shrink int
}

func diffKnobs(t *testing.T) diffConfig {
	c := diffConfig{first: 1, seeds: 50, steps: 400, shrink: 3}
	if testing.Short() {
		c.seeds = 10
	}
	if v := os.Getenv("WINDOWLIMIT_DIFF_SEED"); v == "time" {
		c.first = time.Now().UnixNano() % 1e9
	} else if v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("WINDOWLIMIT_DIFF_SEED=%q: %v", v, err)
		}
		c.first = n
	}
	for _, knob := range []struct {
		name string
		to   *int
	}{{"WINDOWLIMIT_DIFF_SEEDS", &c.seeds}, {"WINDOWLIMIT_DIFF_STEPS", &c.steps}, {"WINDOWLIMIT_DIFF_SHRINK", &c.shrink}} {
		if v := os.Getenv(knob.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || (n == 0 && knob.to != &c.shrink) {
				t.Fatalf("%s=%q: want a positive integer", knob.name, v)
			}
			*knob.to = n
		}
	}
	return c
}

func runDifferential(t *testing.T, back bool) {
	cfg := diffKnobs(t)
	h := newDiffHarness(t)
	var stats diffStats
	kinds := map[string]int{}
	shrunk := 0
	began := time.Now()
	for seed := cfg.first; seed < cfg.first+int64(cfg.seeds); seed++ {
		t.Run("seed="+strconv.FormatInt(seed, 10), func(t *testing.T) {
			g := newDiffGen(seed, back)
			r := h.start(t, g.zones, !back, &stats)
			defer r.close()
			stats.seeds++
			steps := make([]diffStep, 0, cfg.steps+cfg.steps/2)
			last := int64(0)
			for g.requests < cfg.steps {
				s := g.next()
				i := len(steps)
				if s.isRequest() {
					if last != 0 && s.at < last {
						stats.back++
					}
					last = s.at
				}
				steps = append(steps, s)
				want, f := r.do(s)
				if f == nil {
					g.observe(i, s, want)
					continue
				}
				f.step = i
				kinds[f.kind]++
				msg := fmt.Sprintf("seed %d, step %d of the trace: %s\nzones:", seed, i, f.msg)
				for _, z := range g.zones {
					msg += "\n  " + z.String()
				}
				msg += fmt.Sprintf("\nreplay: WINDOWLIMIT_DIFF_SEED=%d WINDOWLIMIT_DIFF_SEEDS=1 go test -count=1 -run '^%s$' ./shared/redisstore",
					seed, t.Name()[:len(t.Name())-len("/seed="+strconv.FormatInt(seed, 10))])
				if shrunk < cfg.shrink {
					shrunk++
					zones, small, sf := h.shrink(t, g.zones, steps, !back, f)
					msg += fmt.Sprintf("\nshrunk to %d steps: %s\n%s", len(small), sf.msg, formatTrace(zones, small))
				} else {
					from := i - 5
					if from < 0 {
						from = 0
					}
					msg += "\nthe last steps:\n" + formatTrace(g.zones, keepSteps(steps, func(j int) bool { return j >= from }))
				}
				t.Error(msg)
				return
			}
		})
	}
	t.Logf("%v in %v", stats, time.Since(began).Round(time.Millisecond))
	if len(kinds) > 0 {
		t.Logf("failing seeds by first disagreement: %v", kinds)
	}
}

// diffGen makes the trace of one seed. Its choices depend only on the seed
// and the memory's decisions, so a seed replays.
type diffGen struct {
	rng *rand.Rand
	// rrng makes the reservation choices: which zones reserve, which
	// responses refund and when.
	rrng  *rand.Rand
	back  bool
	zones []diffZone
	keys  []string
	now   int64 // µs
	scale int64 // mean random gap, µs
	// targets are times earlier decisions named: a RetryAfter or a
	// ResetAfter ending.
	targets []int64
	// history holds the times of earlier requests, to step back onto.
	history []int64
	// requests counts the requests made; pending holds the refunds to
	// come, each due once that many requests are made.
	requests int
	pending  []diffPending
	// xrng makes the resets: of a random key, before one request in
	// resetEvery, so that reservations are in flight across them. It is
	// a generator of its own, so that the other choices of a seed stay
	// what they were without resets.
	xrng *rand.Rand
}

// resetEvery is how many requests a trace makes per reset, on average.
const resetEvery = 25

type diffPending struct{ step, due int }

func newDiffGen(seed int64, back bool) *diffGen {
	rng := rand.New(rand.NewSource(seed))
	g := &diffGen{rng: rng, rrng: rand.New(rand.NewSource(^seed)), back: back, xrng: rand.New(rand.NewSource(seed ^ 0x5e5e7))}
	// brng gives a third of the zones a ban of a tenth of their window
	// to four windows: a generator of its own, as xrng.
	brng := rand.New(rand.NewSource(seed ^ 0xba4))
	for i, n := 0, 1+rng.Intn(4); i < n; i++ {
		z := randomDiffZone(rng, "z"+strconv.Itoa(i))
		z.reserve = g.rrng.Intn(2) == 0
		if brng.Intn(3) == 0 {
			w := int64(z.rule.Window / time.Microsecond)
			z.ban = time.Duration(1+w/10+brng.Int63n(4*w)) * time.Microsecond
		}
		g.zones = append(g.zones, z)
	}
	g.keys = []string{"a", "b", "c"}[:1+rng.Intn(3)]
	g.now = epoch.UnixMicro() + rng.Int63n(1e12)
	// Random gaps bring the first zone from a third of its limit to four
	// times it, per key.
	ref := g.zones[0].rule
	overload := 0.3 + 3.7*rng.Float64()
	g.scale = int64(float64(ref.Window/time.Microsecond) * float64(ref.Cost) / (overload * float64(len(g.keys)) * float64(ref.Limit)))
	if g.scale < 1 {
		g.scale = 1
	}
	return g
}

// randomDiffZone returns a rule in whole microseconds: a sub-window from
// 1µs to 60h, often highly divisible so that simple fractions of it are
// whole; 1 to 20 sub-windows, a window of at most 100h; a limit of 1 to
// 50; a cost of 1, or 2 to 7.
func randomDiffZone(rng *rand.Rand, name string) diffZone {
	alg := ratelimit.Algorithm(rng.Intn(4))
	units := []int64{1, 10, 1000, 1e6, 60e6, 3600e6}
	unit := units[rng.Intn(len(units))]
	span := unit * (1 + rng.Int63n(60))
	if rng.Intn(3) == 0 {
		span = unit * []int64{6, 12, 60, 420, 2520}[rng.Intn(5)]
	}
	const most = 100 * 3600e6
	if span > most {
		span = most
	}
	k := 1 + rng.Int63n(20)
	if alg == ratelimit.Fixed || alg == ratelimit.Log {
		k = 1
	}
	if k*span > most {
		k = most / span
	}
	limit := 1 + rng.Int63n(50)
	cost := int64(1)
	if limit > 1 && rng.Intn(5) < 2 {
		c := limit - 1
		if c > 6 {
			c = 6
		}
		cost = 2 + rng.Int63n(c)
	}
	r := ratelimit.Rule{Window: time.Duration(k*span) * time.Microsecond, SubWindow: time.Duration(span) * time.Microsecond,
		Limit: limit, Algorithm: alg, Cost: cost}
	if err := r.Normalize(); err != nil {
		panic(fmt.Sprintf("%+v: %v", r, err))
	}
	return diffZone{name: name, rule: r}
}

// next returns the next step: a refund that is due, a reset, or a
// request.
func (g *diffGen) next() diffStep {
	for i, p := range g.pending {
		if p.due <= g.requests {
			g.pending = append(g.pending[:i], g.pending[i+1:]...)
			return refundOf(p.step)
		}
	}
	if g.xrng.Intn(resetEvery) == 0 {
		return resetOf(g.xrng.Intn(len(g.zones)), g.keys[g.xrng.Intn(len(g.keys))])
	}
	g.requests++
	g.history = append(g.history, g.now)
	g.now = g.nextTime()
	return diffStep{at: g.now, items: g.pickItems()}
}

// nextTime steps time relative to a random zone's sub-window T and
// window W.
func (g *diffGen) nextTime() int64 {
	rng, now := g.rng, g.now
	r := g.zones[rng.Intn(len(g.zones))].rule
	span, window := int64(r.SubWindow/time.Microsecond), int64(r.Window/time.Microsecond)
	near := func(at int64) int64 { // at, or a microsecond either side, but not back
		at += rng.Int63n(3) - 1
		if at < now {
			at = now
		}
		return at
	}
	if g.back && rng.Intn(14) == 0 {
		return g.stepBack(span, window)
	}
	switch p := rng.Intn(100); {
	case p < 25:
		return now + int64(rng.ExpFloat64()*float64(g.scale))
	case p < 33:
		return now
	case p < 41:
		return now + 1 + rng.Int63n(3)
	case p < 51: // the next sub-window boundary
		return near((now/span + 1) * span)
	case p < 59: // a simple fraction into a sub-window
		d := 2 + rng.Int63n(6)
		at := now/span*span + span*(1+rng.Int63n(d-1))/d
		if at < now {
			at += span
		}
		return at
	case p < 71: // when an earlier decision said something changes
		var ahead []int64
		for _, at := range g.targets {
			if at >= now {
				ahead = append(ahead, at)
			}
		}
		if len(ahead) == 0 {
			return now + int64(rng.ExpFloat64()*float64(g.scale))
		}
		return near(ahead[rng.Intn(len(ahead))])
	case p < 81:
		return now + rng.Int63n(span)
	case p < 88:
		return now + rng.Int63n(window)
	case p < 94: // exactly a window, or a window and a sub-window, later
		return near(now + []int64{window, window + span}[rng.Intn(2)])
	default: // past the window
		return now + window + span + rng.Int63n(window)
	}
}

func (g *diffGen) stepBack(span, window int64) int64 {
	rng, now := g.rng, g.now
	switch rng.Intn(5) {
	case 0: // within about a sub-window
		return now - 1 - rng.Int63n(span)
	case 1: // across sub-windows
		return now - span - rng.Int63n(window)
	case 2: // onto an earlier sub-window boundary, or a microsecond either side
		return (now/span-rng.Int63n(window/span+2))*span + rng.Int63n(3) - 1
	case 3: // onto an earlier request's time
		return g.history[rng.Intn(len(g.history))]
	}
	return now - window - rng.Int63n(window+span) // more than a window
}

// pickItems returns one item, or several zones on one key, or several
// distinct (zone, key) pairs.
func (g *diffGen) pickItems() []diffItem {
	rng, nz, nk := g.rng, len(g.zones), len(g.keys)
	if nz*nk == 1 || rng.Intn(100) < 55 {
		return []diffItem{{rng.Intn(nz), g.keys[rng.Intn(nk)]}}
	}
	if nz > 1 && rng.Intn(2) == 0 {
		key := g.keys[rng.Intn(nk)]
		var items []diffItem
		for _, z := range rng.Perm(nz)[:2+rng.Intn(nz-1)] {
			items = append(items, diffItem{z, key})
		}
		return items
	}
	most := nz*nk - 1
	if most > 3 {
		most = 3
	}
	var items []diffItem
	for _, p := range rng.Perm(nz * nk)[:2+rng.Intn(most)] {
		items = append(items, diffItem{p % nz, g.keys[p/nz]})
	}
	return items
}

// observe keeps the times the memory's decisions name as targets and
// settles the response of an admitted request with reservations, the
// step at index i of the trace: a status its zones do not count refunds
// it later (before the next request, or a few or many requests later),
// any other end keeps its count.
func (g *diffGen) observe(i int, s diffStep, want []ratelimit.Decision) {
	if !s.isRequest() {
		return
	}
	admitted, reserved := true, false
	for j, d := range want {
		admitted = admitted && d.Allowed
		reserved = reserved || g.zones[s.items[j].zone].reserve
	}
	if admitted && reserved && g.rrng.Intn(2) == 0 {
		delay := g.rrng.Intn(2)
		switch p := g.rrng.Intn(20); {
		case p >= 17:
			delay = 17 + g.rrng.Intn(120)
		case p >= 10:
			delay = 2 + g.rrng.Intn(15)
		}
		g.pending = append(g.pending, diffPending{step: i, due: g.requests + delay})
	}
	for _, d := range want {
		if !d.Allowed {
			g.targets = append(g.targets, s.at+ceilMicros(d.RetryAfter))
		}
		if d.ResetAfter > 0 {
			g.targets = append(g.targets, s.at+ceilMicros(d.ResetAfter))
		}
	}
	if n := len(g.targets); n > 16 {
		g.targets = append(g.targets[:0], g.targets[n-16:]...)
	}
}
