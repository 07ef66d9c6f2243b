package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// TestRedisLeanAndFullKeys: plain takes keep a key lean (no generation, no
// leased units), across new sub-windows and a total that outgrows its
// width; the first reservation or lease makes it full with every count
// kept, its refund gives the count back, and plain takes then keep it
// full. Each step's decision is the in-memory zone's.
func TestRedisLeanAndFullKeys(t *testing.T) {
	s := redistest.Start(t)
	store, client := newStore(t, s.Addr())
	store.callerTime = true
	r := ratelimit.Rule{Window: time.Second, SubWindow: 100 * time.Millisecond, Limit: 1000}
	z := newZone(t, "layout", r)
	mem := ratelimit.Memory{}
	zm := newZone(t, "layout", r)
	ctx := context.Background()
	m := int64(11) // cells: the window's 10 sub-windows and the leaving one
	strlen := func() int64 {
		t.Helper()
		n, err := client.Do(ctx, "STRLEN", Key(store.prefix, z.Name(), "k"))
		if err != nil {
			t.Fatal(err)
		}
		return n.Int
	}
	// both takes item at now from Redis and from memory and wants the same
	// decision.
	var memLast ratelimit.Decision // memory's decision of the last call of both
	both := func(now time.Time, it ratelimit.Item) ratelimit.Decision {
		t.Helper()
		out, want := make([]ratelimit.Decision, 1), make([]ratelimit.Decision, 1)
		if _, err := store.Take(ctx, now, []ratelimit.Item{it}, out); err != nil {
			t.Fatal(err)
		}
		it.Zone = zm
		if _, err := mem.Take(ctx, now, []ratelimit.Item{it}, want); err != nil {
			t.Fatal(err)
		}
		if out[0].Allowed != want[0].Allowed || out[0].Remaining != want[0].Remaining {
			t.Fatalf("at +%v: redis %+v, memory %+v", now.Sub(epoch), out[0], want[0])
		}
		memLast = want[0]
		return out[0]
	}
	now := epoch
	for i := 0; i < 30; i++ { // three sub-windows, 10 each
		both(now.Add(time.Duration(i)*10*time.Millisecond), ratelimit.Item{Zone: z, Key: "k"})
	}
	if n := strlen(); n != 15+(m+1) {
		t.Fatalf("after plain takes: %d bytes, want a lean key of %d", n, 15+(m+1))
	}
	now = now.Add(300 * time.Millisecond)
	for i := 0; i < 260; i++ { // the total passes 255: two bytes an integer
		both(now, ratelimit.Item{Zone: z, Key: "k"})
	}
	if n := strlen(); n != 15+2*(m+1) {
		t.Fatalf("after a total of 290: %d bytes, want a lean key of %d", n, 15+2*(m+1))
	}
	d := both(now, ratelimit.Item{Zone: z, Key: "k", Refundable: true})
	if d.Receipt.At == 0 || d.Receipt.Generation == 0 {
		t.Fatalf("a reservation on a lean key: %+v, want a receipt with a generation", d)
	}
	if n := strlen(); n != 19+2*(m+2) {
		t.Fatalf("after a reservation: %d bytes, want a full key of %d", n, 19+2*(m+2))
	}
	if err := store.Refund(ctx, []ratelimit.Item{{Zone: z, Key: "k", Refundable: true}}, []ratelimit.Decision{d}); err != nil {
		t.Fatal(err)
	}
	if err := mem.Refund(ctx, []ratelimit.Item{{Zone: zm, Key: "k", Refundable: true}}, []ratelimit.Decision{memLast}); err != nil {
		t.Fatal(err)
	}
	if after := both(now, ratelimit.Item{Zone: z, Key: "k"}); after.Remaining != d.Remaining {
		t.Fatalf("after the refund %d remain, want %d: the reservation came back", after.Remaining, d.Remaining)
	}
	both(now.Add(100*time.Millisecond), ratelimit.Item{Zone: z, Key: "k"})
	if n := strlen(); n != 19+2*(m+2) {
		t.Fatalf("plain takes after a reservation: %d bytes, want the full key of %d", n, 19+2*(m+2))
	}
	// A lease on another lean key makes it full too.
	both(now, ratelimit.Item{Zone: z, Key: "l"})
	out := make([]ratelimit.Decision, 1)
	if _, err := store.Take(ctx, now, []ratelimit.Item{{Zone: z, Key: "l", Lease: 50}}, out); err != nil || out[0].Leased == 0 || out[0].Receipt.Generation == 0 {
		t.Fatalf("a lease on a lean key: %+v, %v; want units and a generation", out[0], err)
	}
	n, err := client.Do(ctx, "STRLEN", Key(store.prefix, z.Name(), "l"))
	if err != nil || n.Int != 19+m+2 {
		t.Fatalf("after a lease: %d bytes, %v; want a full key of %d", n.Int, err, 19+m+2)
	}
}

// TestRedisExpiryAfterClockBack: a whole write in the newest sub-window
// while the clock reads earlier (a lean key made full by a reservation)
// keeps the key until that sub-window stops counting by the clock, not
// one window after the sub-window's start: with the clock 300 ms back, a
// 1 s window of 100 ms sub-windows keeps it some 1.4 s, not 1.1 s.
func TestRedisExpiryAfterClockBack(t *testing.T) {
	s := redistest.Start(t)
	store, client := newStore(t, s.Addr())
	store.callerTime = true
	z := newZone(t, "back", ratelimit.Rule{Window: time.Second, SubWindow: 100 * time.Millisecond, Limit: 100})
	ctx := context.Background()
	at := epoch.Add(time.Second).Truncate(100 * time.Millisecond)
	take1(t, store, at, z, "k")
	out := make([]ratelimit.Decision, 1)
	if _, err := store.Take(ctx, at.Add(-300*time.Millisecond), []ratelimit.Item{{Zone: z, Key: "k", Refundable: true}}, out); err != nil || !out[0].Allowed {
		t.Fatalf("reservation with the clock back: %+v, %v", out[0], err)
	}
	ttl, err := client.Do(ctx, "PTTL", Key(store.prefix, z.Name(), "k"))
	if err != nil {
		t.Fatal(err)
	}
	// Sub-window c (from at) counts until at + 1.1 s; the clock reads
	// at - 0.3 s.
	if ttl.Int < 1300 {
		t.Fatalf("PTTL %d ms after a write with the clock 300 ms back, want about 1401: the count would expire early", ttl.Int)
	}
}

// TestRedisLeaseReplyOnLeanKey: a lease call denied on a key that only
// plain takes counted (a key re-made after the one a lease counted in was
// reset or lost) names a generation no lease holds, 2^32, so that the
// holder ends its lease as for a reset (lease's endIfReset); a key with no
// generation is never reported as unknown (0), which would let the lease go
// on.
func TestRedisLeaseReplyOnLeanKey(t *testing.T) {
	s := redistest.Start(t)
	store, _ := newStore(t, s.Addr())
	store.callerTime = true
	z := newZone(t, "leanlease", ratelimit.Rule{Window: time.Second, SubWindow: 100 * time.Millisecond, Limit: 3})
	for i := 0; i < 3; i++ {
		take1(t, store, epoch, z, "k")
	}
	out := make([]ratelimit.Decision, 1)
	if _, err := store.Take(context.Background(), epoch, []ratelimit.Item{{Zone: z, Key: "k", Lease: 10}}, out); err != nil {
		t.Fatal(err)
	}
	if out[0].Allowed || out[0].Receipt.Generation != 1<<32 {
		t.Fatalf("a lease call on a lean key at its limit: %+v, want a denial naming generation 2^32", out[0])
	}
}
