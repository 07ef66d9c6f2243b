package inflight

import (
	"context"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/redisstore"
	"github.com/windowlimit/windowlimit/shared/resp"
)

// TestSlotsDifferential drives the memory table (TakeMemory and
// ReleaseMemory), the Redis slots script (redisstore.Slots, against a
// real redis-server) and an exact reference with one random sequence of
// takes, releases and operators' resets on a few keys, each take with
// its own n (a limit lowered or raised by a reload): every take is
// admitted or refused alike, with the same count of slots held, and the
// counts agree after every step. A release of a slot taken before its
// key's reset frees nothing of the slots taken after it.
func TestSlotsDifferential(t *testing.T) {
	addr := redistest.Start(t).Addr()
	c, err := resp.New(resp.Options{Addrs: []string{addr}, ReadTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	remote, err := redisstore.NewSlots(c, "diff:")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ttl = time.Minute // no slot expires during the run

	for seed := int64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewSource(seed))
		mem := &Limiter{local: NewTable(3)} // at most 3 keys hold slots
		zone := "z" + strconv.FormatInt(seed, 10)
		// A slot as each side holds it; gen is its key's reset count
		// when it was taken.
		type slot struct {
			key    string
			gen    int
			e      *entry
			member string
		}
		var held []slot
		ref := map[string]int64{} // the reference: slots held per key
		gen := map[string]int{}
		keys := []string{"a", "b", "c", "d"}
		refused, released, resets := 0, 0, 0
		for step := 0; step < 400; step++ {
			key := keys[rng.Intn(len(keys))]
			set := remote.Key(zone, key)
			switch op := rng.Intn(10); {
			case op < 6: // take
				n := int64(1 + rng.Intn(4))
				want := ref[key] < n
				if ref[key] == 0 && len(ref) >= 3 {
					want = false // memory: a fresh key past the table's bound
				}
				e, mh := TakeMemory(mem, key, n)
				member, rh, err := remote.Take(ctx, set, n, ttl)
				if err != nil {
					t.Fatal(err)
				}
				if (e != nil) != want {
					t.Fatalf("seed %d step %d: memory take of %q at n=%d with %d held: admitted %v, want %v", seed, step, key, n, ref[key], e != nil, want)
				}
				// Redis has no key bound: it admits whenever fewer than n
				// are held. Its refusal is the reference's otherwise.
				if rWant := ref[key] < n; (member != "") != rWant {
					t.Fatalf("seed %d step %d: redis take of %q at n=%d with %d held: admitted %v", seed, step, key, n, ref[key], member != "")
				}
				if e == nil {
					refused++
					// Keep both sides alike: a slot Redis gave where the
					// memory table's key bound refused goes back at once.
					if member != "" {
						if err := remote.Release(ctx, set, member); err != nil {
							t.Fatal(err)
						}
					}
					if mh < ref[key] {
						t.Fatalf("seed %d step %d: memory refused %q reporting %d held, %d are", seed, step, key, mh, ref[key])
					}
					continue
				}
				ref[key]++
				if mh != ref[key] || rh != ref[key] {
					t.Fatalf("seed %d step %d: take of %q: memory says %d held, redis %d, reference %d", seed, step, key, mh, rh, ref[key])
				}
				held = append(held, slot{key, gen[key], e, member})
			case op < 9: // release a random slot
				if len(held) == 0 {
					continue
				}
				i := rng.Intn(len(held))
				s := held[i]
				held = append(held[:i], held[i+1:]...)
				ReleaseMemory(mem, s.key, s.e)
				if err := remote.Release(ctx, remote.Key(zone, s.key), s.member); err != nil {
					t.Fatal(err)
				}
				if s.gen == gen[s.key] {
					if ref[s.key]--; ref[s.key] == 0 {
						delete(ref, s.key)
					}
				}
				released++
			default: // an operator's reset of the key
				mem.local.Reset(key)
				if _, err := remote.Reset(ctx, set); err != nil {
					t.Fatal(err)
				}
				delete(ref, key)
				gen[key]++
				resets++
			}
			for _, k := range keys {
				rh, err := remote.Held(ctx, remote.Key(zone, k))
				if err != nil {
					t.Fatal(err)
				}
				if mh := mem.local.Held(k); mh != ref[k] || rh != ref[k] {
					t.Fatalf("seed %d step %d: %q holds %d in memory, %d in redis, %d in the reference", seed, step, k, mh, rh, ref[k])
				}
			}
			if mem.local.Keys() != int64(len(ref)) {
				t.Fatalf("seed %d step %d: the table holds %d keys, the reference %d", seed, step, mem.local.Keys(), len(ref))
			}
		}
		t.Logf("seed %d: %d refused, %d released, %d resets", seed, refused, released, resets)
	}
}
