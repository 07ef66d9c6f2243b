package redisstore

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestRedisReloadsReleaseZones: one store and guard serve zone after zone,
// as config reloads replace them; each zone sees an admission and a
// denial (script arguments and denial cache). Once dropped, the zones are
// collected: the store and guard do not pin them.
func TestRedisReloadsReleaseZones(t *testing.T) {
	store, _ := newStore(t, miniredis.RunT(t).Addr())
	g := newGuard(t, store, guard.Options{})
	const reloads = 50
	var collected int64
	for i := 0; i < reloads; i++ {
		// A changing limit, so each reload has a new rule.
		z, err := ratelimit.NewZone("reload", ratelimit.Rule{Window: time.Minute, Limit: int64(1 + i%5)}, ratelimit.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		runtime.SetFinalizer(z, func(*ratelimit.Zone) { atomic.AddInt64(&collected, 1) })
		now := time.Now()
		denied := false
		for j := 0; j <= i%5+1; j++ {
			denied = !take1(t, g, now, z, "k"+strconv.Itoa(i)).Allowed
		}
		if !denied {
			t.Fatal("no denial: the denial cache is not exercised")
		}
		z.Close()
	}
	if n := g.Stats().Denials; n == 0 {
		t.Fatal("the denial cache is empty")
	}
	// Finalizers run after a GC finds the zones unreachable; a few rounds
	// let them run. Conservative scanning may keep one or two.
	for round := 0; round < 20 && atomic.LoadInt64(&collected) < reloads-2; round++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := atomic.LoadInt64(&collected); n < reloads-2 {
		t.Fatalf("%d of %d dropped zones collected: the redis store or its guard keeps them", n, reloads)
	}
}

// TestRedisArgsCacheBound: reloads with ever new rules do not grow the
// store's cache of script arguments past maxCachedRules.
func TestRedisArgsCacheBound(t *testing.T) {
	store, err := New(&replyRunner{}, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3*maxCachedRules; i++ {
		z, err := ratelimit.NewZone("bound", ratelimit.Rule{Window: time.Minute, Limit: int64(1 + i)}, ratelimit.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.ruleArgs(z); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	store.args.Load().(*sync.Map).Range(func(any, any) bool { n++; return true })
	if n == 0 || n > maxCachedRules {
		t.Fatalf("%d cached rules, want 1 to %d", n, maxCachedRules)
	}
}
