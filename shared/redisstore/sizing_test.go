package redisstore

import (
	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/ratelimit"

	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// TestRedisSizing measures what the sizing guide in docs/redis.md quotes: the memory
// of 10,000 limiter keys on redis-server, by MEMORY USAGE of one key and
// by the growth of used_memory (which adds Redis's own tables, and the
// expiry of each key). It prints figures, asserts nothing, and runs only
// with WINDOWLIMIT_REDIS_SIZING=1:
//
//	WINDOWLIMIT_REDIS_SIZING=1 go test -count=1 -v -run TestRedisSizing ./shared/redisstore
func TestRedisSizing(t *testing.T) {
	if os.Getenv("WINDOWLIMIT_REDIS_SIZING") == "" {
		t.Skip("a measurement: set WINDOWLIMIT_REDIS_SIZING=1")
	}
	const keys = 10000
	sliding := ratelimit.Rule{Window: time.Minute, SubWindow: 6 * time.Second, Limit: 1000}
	logRule := ratelimit.Rule{Window: time.Minute, Limit: 1000, Algorithm: ratelimit.Log}
	// busy counts 50 per request: 550 in a key's 11 sub-windows, whose
	// counts then take two bytes each (see redisScript).
	busy := sliding
	busy.Cost = 50
	// The longest forms: 15 and 24 bytes.
	v4 := func(i int) string { return fmt.Sprintf("198.%d.%d.%d", 100+i/10000, 100+i/100%100, 100+i%100) }
	v6 := func(i int) string {
		return fmt.Sprintf("2a02:%04x:%04x:%04x::/64", 0x1000+i/4096, 0x1000+i%4096, 0xabcd)
	}
	apiKey := func(i int) string { return fmt.Sprintf("key_%036d", i) }
	for _, tc := range []struct {
		name   string
		rule   ratelimit.Rule
		key    func(int) string
		writes int           // requests per key
		step   time.Duration // between them
	}{
		{"sliding 10 sub-windows, IPv4, 1 request", sliding, v4, 1, 0},
		{"sliding 10 sub-windows, IPv4, every sub-window", sliding, v4, 11, 6 * time.Second},
		{"sliding 10 sub-windows, IPv4, 50 in every sub-window", busy, v4, 11, 6 * time.Second},
		{"sliding 10 sub-windows, IPv6 /64, 1 request", sliding, v6, 1, 0},
		{"sliding 10 sub-windows, IPv6 /64, every sub-window", sliding, v6, 11, 6 * time.Second},
		{"sliding 10 sub-windows, IPv6 /64, 50 in every sub-window", busy, v6, 11, 6 * time.Second},
		{"sliding 10 sub-windows, 40-byte API key, every sub-window", sliding, apiKey, 11, 6 * time.Second},
		{"log, IPv4, 10 entries", logRule, v4, 10, time.Second},
		{"log, IPv6 /64, 10 entries", logRule, v6, 10, time.Second},
	} {
		s := redistest.Start(t)
		c := newClient(t, resp.Options{Addrs: []string{s.Addr()}, ReadTimeout: 5 * time.Second, AutoPipeline: true})
		store, err := New(c, Settings{KeyPrefix: "rl:"})
		if err != nil {
			t.Fatal(err)
		}
		store.callerTime = true
		z := newZone(t, "api", tc.rule)
		take1(t, store, epoch, z, "warm") // load the script
		before := usedMemory(t, c)
		var wg sync.WaitGroup
		const workers = 8
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := make([]ratelimit.Decision, 1)
				for i := w; i < keys; i += workers {
					items := []ratelimit.Item{{Zone: z, Key: tc.key(i)}}
					for j := 0; j < tc.writes; j++ {
						if _, err := store.Take(context.Background(), epoch.Add(time.Duration(j)*tc.step), items, out); err != nil {
							t.Error(err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		after := usedMemory(t, c)
		one, err := c.Do(context.Background(), "MEMORY", "USAGE", Key("rl:", "api", tc.key(keys/2)), "SAMPLES", "0")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-58s MEMORY USAGE %4d B/key, used_memory +%d B per %d keys = %d B/key",
			tc.name, one.Int, after-before, keys, (after-before)/keys)
	}
}

func usedMemory(t *testing.T, c *resp.Client) int64 {
	t.Helper()
	info, err := c.Do(context.Background(), "INFO", "memory")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info.Str, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no used_memory in INFO memory")
	return 0
}

// TestRedisEvictionPolicies shows what each maxmemory-policy does to a
// client at its limit during a flood of fresh keys past maxmemory (3 MB):
// the client keeps knocking through an instance whose denial cache
// answers it (so Redis never touches its key), then asks through a
// second instance. It prints how often that second instance admitted it
// and whether its key survived, and fails unless that is what
// docs/redis.md says of the policy: 0 under noeviction; its full budget
// (5) under the LRU policies, which evict the key the denial cache keeps
// idle; 0 under the LFU policies, where the client's few requests make
// its key more used than the flood's; 0 or 5 under volatile-ttl and
// allkeys-random, which evict from a random sample. Runs only with
// WINDOWLIMIT_REDIS_SIZING=1 (about 20 s).
func TestRedisEvictionPolicies(t *testing.T) {
	if os.Getenv("WINDOWLIMIT_REDIS_SIZING") == "" {
		t.Skip("a measurement: set WINDOWLIMIT_REDIS_SIZING=1")
	}
	for _, tc := range []struct {
		policy string
		admits []int // what a run may admit of 10
	}{
		{"noeviction", []int{0}},
		{"allkeys-lru", []int{5}},
		{"volatile-lru", []int{5}},
		{"volatile-ttl", []int{0, 5}},
		{"allkeys-lfu", []int{0}},
		{"volatile-lfu", []int{0}},
		{"allkeys-random", []int{0, 5}},
	} {
		policy := tc.policy
		s := redistest.Start(t, "--maxmemory", "3mb", "--maxmemory-policy", policy)
		store, _ := newStore(t, s.Addr())
		z := newZone(t, "evict-"+policy, oomRule)
		a := newOOMGuard(t, store, guard.FailLocal)
		for i := int64(0); i <= oomRule.Limit; i++ {
			take1(t, a, time.Now(), z, "victim")
		}
		const flood = 30000
		for i := 0; i < flood; i++ {
			take1(t, a, time.Now(), z, "flood-"+strconv.Itoa(i))
			if i%100 == 0 && take1(t, a, time.Now(), z, "victim").Allowed {
				t.Errorf("%s: the denial cache admitted the victim", policy)
			}
		}
		b := newOOMGuard(t, store, guard.FailLocal)
		admitted := 0
		for i := 0; i < 10; i++ {
			if take1(t, b, time.Now(), z, "victim").Allowed {
				admitted++
			}
		}
		exists := s.Do(t, "EXISTS", Key("t:", z.Name(), "victim"))[0]
		keys := s.Do(t, "DBSIZE")[0]
		st := a.Stats()
		t.Logf("%-15s victim admitted %2d of 10 by a second instance, its key exists: %s; %s keys in redis; flood: %d of %d not counted (on_store_error local)",
			policy, admitted, exists, keys, st.OutOfMemory, flood)
		if !slices.Contains(tc.admits, admitted) {
			t.Errorf("%s: the victim was admitted %d of 10 times, want one of %v (docs/redis.md)", policy, admitted, tc.admits)
		}
	}
}
