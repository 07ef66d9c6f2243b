// Package redisscenario drives shared/resp and the Redis store against a
// real Redis. The yaegi harness runs it interpreted, as Traefik would, and
// compiled, so a difference is known to come from the interpreter.
package redisscenario

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// Standalone runs the scenarios against the server at addr, with a pooled
// and with an auto-pipelined client.
func Standalone(addr string) error {
	if err := run([]string{addr}, false, false); err != nil {
		return err
	}
	if err := run([]string{addr}, false, true); err != nil {
		return fmt.Errorf("pipelined: %w", err)
	}
	return nil
}

// Cluster runs them against the cluster whose nodes are listed in addrs,
// comma-separated.
func Cluster(addrs string) error {
	if err := run(strings.Split(addrs, ","), true, false); err != nil {
		return err
	}
	if err := run(strings.Split(addrs, ","), true, true); err != nil {
		return fmt.Errorf("pipelined: %w", err)
	}
	return nil
}

func run(addrs []string, cluster, pipelined bool) error {
	c, err := resp.New(resp.Options{Addrs: addrs, Cluster: cluster, ReadTimeout: 2 * time.Second, AutoPipeline: pipelined})
	if err != nil {
		return err
	}
	defer c.Close()
	store, err := redisstore.New(c, redisstore.Settings{KeyPrefix: "yaegi:", Cluster: cluster})
	if err != nil {
		return err
	}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	if pipelined {
		if err := concurrent(store, suffix); err != nil {
			return fmt.Errorf("concurrent: %w", err)
		}
	}
	if err := limit(store, suffix); err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	if err := allOrNothing(store, suffix); err != nil {
		return fmt.Errorf("all-or-nothing: %w", err)
	}
	if !cluster {
		if _, err := c.Do(context.Background(), "SCRIPT", "FLUSH"); err != nil {
			return err
		}
		if err := limit(store, suffix+"-after-flush"); err != nil {
			return fmt.Errorf("after SCRIPT FLUSH: %w", err)
		}
	}
	if err := guardOnDeadRedis(); err != nil {
		return fmt.Errorf("dead redis: %w", err)
	}
	return nil
}

func take(s ratelimit.Store, items []ratelimit.Item) (bool, []ratelimit.Decision, error) {
	out := make([]ratelimit.Decision, len(items))
	ok, err := s.Take(context.Background(), time.Now(), items, out)
	return ok, out, err
}

// limit: each algorithm admits exactly its limit, then denies with a
// RetryAfter.
func limit(s ratelimit.Store, suffix string) error {
	for _, alg := range []ratelimit.Algorithm{ratelimit.Sliding, ratelimit.Strict, ratelimit.Fixed, ratelimit.Log} {
		z, err := ratelimit.NewZone("limit-"+alg.String()+"-"+suffix, ratelimit.Rule{Window: time.Hour, Limit: 5, Algorithm: alg}, ratelimit.Options{SweepInterval: -1})
		if err != nil {
			return err
		}
		items := []ratelimit.Item{{Zone: z, Key: "client"}}
		for i := 0; i < 7; i++ {
			ok, out, err := take(s, items)
			if err != nil {
				z.Close()
				return err
			}
			want := i < 5
			if ok != want || out[0].Limit != 5 {
				z.Close()
				return fmt.Errorf("%v request %d: %+v, want allowed %v", alg, i, out[0], want)
			}
			if want && out[0].Remaining != int64(4-i) {
				z.Close()
				return fmt.Errorf("%v request %d: remaining %d, want %d", alg, i, out[0].Remaining, 4-i)
			}
			if !want && (out[0].RetryAfter <= 0 || out[0].RetryAfter > time.Hour+6*time.Minute) {
				z.Close()
				return fmt.Errorf("%v request %d: retry after %v", alg, i, out[0].RetryAfter)
			}
		}
		z.Close()
	}
	return nil
}

// concurrent: goroutines sharing the pipelined connection admit exactly
// the limit between them.
func concurrent(s ratelimit.Store, suffix string) error {
	z, err := ratelimit.NewZone("concurrent-"+suffix, ratelimit.Rule{Window: time.Hour, Limit: 50}, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		return err
	}
	defer z.Close()
	results := make(chan int, 8)
	for w := 0; w < 8; w++ {
		go func() {
			admitted := 0
			items := []ratelimit.Item{{Zone: z, Key: "shared"}}
			for i := 0; i < 10; i++ {
				if ok, _, err := take(s, items); err == nil && ok {
					admitted++
				}
			}
			results <- admitted
		}()
	}
	total := 0
	for w := 0; w < 8; w++ {
		total += <-results
	}
	if total != 50 {
		return fmt.Errorf("%d admitted of 80, want 50", total)
	}
	return nil
}

// allOrNothing: a request denied by one rule is not counted by the other.
func allOrNothing(s ratelimit.Store, suffix string) error {
	wide, err := ratelimit.NewZone("wide-"+suffix, ratelimit.Rule{Window: time.Hour, Limit: 10}, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		return err
	}
	defer wide.Close()
	narrow, err := ratelimit.NewZone("narrow-"+suffix, ratelimit.Rule{Window: time.Hour, Limit: 1}, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		return err
	}
	defer narrow.Close()
	items := []ratelimit.Item{{Zone: wide, Key: "k"}, {Zone: narrow, Key: "k"}}
	for i := 0; i < 4; i++ {
		if _, _, err := take(s, items); err != nil {
			return err
		}
	}
	_, out, err := take(s, items[:1])
	if err != nil {
		return err
	}
	if out[0].Remaining != 8 {
		return fmt.Errorf("wide zone has %d remaining after one admitted request and this one, want 8", out[0].Remaining)
	}
	return nil
}

// guardOnDeadRedis: with nothing listening, the allow policy admits, Take
// reports no error, and the breaker opens.
func guardOnDeadRedis() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	c, err := resp.New(resp.Options{Addrs: []string{addr}, DialTimeout: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	defer c.Close()
	store, err := redisstore.New(c, redisstore.Settings{})
	if err != nil {
		return err
	}
	logged := 0
	g, err := guard.New(store, guard.Options{
		Probe:    store.Ping,
		LogError: func(error, int64) { logged++ },
	})
	if err != nil {
		return err
	}
	defer g.Close()
	z, err := ratelimit.NewZone("dead", ratelimit.Rule{Window: time.Minute, Limit: 1}, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		return err
	}
	defer z.Close()
	for i := 0; i < 3; i++ {
		ok, _, err := take(g, []ratelimit.Item{{Zone: z, Key: "k"}})
		if err != nil || !ok {
			return fmt.Errorf("request %d: allowed %v, error %v", i, ok, err)
		}
	}
	if st := g.Stats(); !st.Open || st.Failures != 1 || logged != 1 {
		return errors.New("breaker did not open after the first failure: " + fmt.Sprintf("%+v, %d logged", st, logged))
	}
	return nil
}

// Throughput takes n decisions from 50 goroutines on 10000 keys through a
// pooled or auto-pipelined client and returns decisions per second.
func Throughput(addr string, pipelined bool, n int) (float64, error) {
	c, err := resp.New(resp.Options{Addrs: []string{addr}, ReadTimeout: 5 * time.Second, AutoPipeline: pipelined})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	store, err := redisstore.New(c, redisstore.Settings{KeyPrefix: "yaegi-bench:"})
	if err != nil {
		return 0, err
	}
	z, err := ratelimit.NewZone("throughput", ratelimit.Rule{Window: time.Minute, Limit: ratelimit.MaxLimit}, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		return 0, err
	}
	defer z.Close()
	const workers = 50
	errs := make(chan error, workers)
	start := time.Now()
	for w := 0; w < workers; w++ {
		go func(w int) {
			items := []ratelimit.Item{{Zone: z}}
			out := make([]ratelimit.Decision, 1)
			for i := w; i < n; i += workers {
				items[0].Key = "203.0." + strconv.Itoa(i%10000/256) + "." + strconv.Itoa(i%256)
				if _, err := store.Take(context.Background(), time.Now(), items, out); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// Layer takes n decisions from one goroutine through one layer of the
// Traefik plugin's Redis path against the server at addr: "client" runs
// the script's EVALSHA with a decision's keys and arguments, "store"
// redisstore.Store.Take, "guard" guard.Guard.Take in front of it (denial cache and
// breaker), "remote" redisstore.TakeKey through that guard, the call
// the plugin makes. It returns the time taken. A benchmark
// against a fake server that answers at compiled speed measures the
// layers' own cost.
func Layer(addr, layer string, pipelined bool, n int) (time.Duration, error) {
	c, err := resp.New(resp.Options{Addrs: []string{addr}, ReadTimeout: 5 * time.Second, AutoPipeline: pipelined})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	store, err := redisstore.New(c, redisstore.Settings{KeyPrefix: "yaegi-bench:"})
	if err != nil {
		return 0, err
	}
	// Deny on a store error, so that a failure cannot pass for a decision
	// (the guard's Take returns no error: its policy answers instead).
	g, err := guard.New(store, guard.Options{Probe: store.Ping, OnError: guard.FailDeny})
	if err != nil {
		return 0, err
	}
	defer g.Close()
	z, err := ratelimit.NewZone("layer", ratelimit.Rule{Window: time.Minute, Limit: ratelimit.MaxLimit}, ratelimit.Options{SweepInterval: -1})
	if err != nil {
		return 0, err
	}
	defer z.Close()
	kc := store.KeyCall(z, g)
	var s ratelimit.Store = store
	if layer == "guard" {
		s = g
	}
	ctx := context.Background()
	items := []ratelimit.Item{{Zone: z, Key: "203.0.113.7"}}
	out := make([]ratelimit.Decision, 1)
	sha := "0123456789abcdef0123456789abcdef01234567"
	keys := []string{redisstore.Key("yaegi-bench:", "layer", "203.0.113.7")}
	args := []string{"0", "0", "60000000", "6000000", "9007199254740991", "1", "-61441024", "0"}
	if ok, err := s.Take(ctx, time.Now(), items, out); err != nil || !ok {
		return 0, fmt.Errorf("the first decision: allowed %v, error %v", ok, err)
	}
	if layer == "client" || layer == "prepared" {
		// The reply the loop below gets, as the store would read it: an
		// admission of four integers.
		res, err := c.EvalSha(ctx, sha, keys, args)
		if err != nil || len(res) != 4 || res[0] != 1 {
			return 0, fmt.Errorf("client: the script's reply %v, error %v: no admission", res, err)
		}
	}
	start := time.Now()
	switch layer {
	case "client":
		for k := 0; k < n; k++ {
			if _, err := c.EvalSha(ctx, sha, keys, args); err != nil {
				return 0, err
			}
		}
	case "store", "guard":
		for k := 0; k < n; k++ {
			if _, err := s.Take(ctx, time.Now(), items, out); err != nil {
				return 0, err
			}
		}
	case "prepared":
		head, tail := c.PrepareEvalSha(sha, args)
		for k := 0; k < n; k++ {
			if _, err := resp.EvalPrepared(ctx, c, head, keys[0], tail); err != nil {
				return 0, err
			}
		}
	case "remote":
		for k := 0; k < n; k++ {
			if d := redisstore.TakeKey(ctx, g, kc, z, "203.0.113.7", time.Now()); !d.Allowed {
				return 0, errors.New("remote: denied")
			}
		}
	default:
		return 0, errors.New("unknown layer " + layer)
	}
	d := time.Since(start)
	// Every decision the store's: none answered by the guard's policy, and
	// the last one an admission.
	if st := g.Stats(); st.Failures != 0 || st.Fallbacks != 0 {
		return 0, fmt.Errorf("%s: %d store errors, %d decisions by the failure policy", layer, st.Failures, st.Fallbacks)
	}
	if layer != "client" && layer != "prepared" && layer != "remote" && !out[0].Allowed {
		return 0, errors.New(layer + ": the last decision denied")
	}
	return d, nil
}
