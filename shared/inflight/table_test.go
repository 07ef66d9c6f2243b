package inflight

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// take and release are the table's side of TakeMemory and ReleaseMemory,
// for the table's tests.
func (t *Table) take(key string, n int64) (*entry, int64) {
	return TakeMemory(&Limiter{local: t}, key, n)
}

func (t *Table) release(key string, e *entry) { ReleaseMemory(&Limiter{local: t}, key, e) }

// TestTableAtMostN: 12 goroutines on one key with n = 3 never hold more
// than 3 slots at once; another key is unaffected; every entry is gone
// once all are released; then 3 are taken and a 4th is refused.
func TestTableAtMostN(t *testing.T) {
	tb := NewTable(0)
	const n = 3
	var holding, most atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 12; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				e, _ := tb.take("k", n)
				if e == nil {
					continue
				}
				h := holding.Add(1)
				for old := most.Load(); h > old && !most.CompareAndSwap(old, h); old = most.Load() {
				}
				if o, _ := tb.take("other", n); o == nil {
					t.Error("another key was refused")
				} else {
					tb.release("other", o)
				}
				holding.Add(-1)
				tb.release("k", e)
			}
		}()
	}
	wg.Wait()
	// How many the goroutines held at once depends on the scheduler (two
	// cores run two at a time); that n can be held is checked below.
	if most.Load() > n {
		t.Fatalf("most held at once: %d, want at most %d", most.Load(), n)
	}
	if tb.Keys() != 0 || tb.Held("k") != 0 {
		t.Fatalf("after every release: %d keys, %d held", tb.Keys(), tb.Held("k"))
	}
	var held []*entry
	for i := 0; i < n; i++ {
		e, h := tb.take("k", n)
		if e == nil || h != int64(i+1) {
			t.Fatalf("take %d of %d: entry %v, %d held", i+1, n, e, h)
		}
		held = append(held, e)
	}
	if e, h := tb.take("k", n); e != nil || h != n {
		t.Fatalf("take %d with %d held: entry %v, %d held; want refused", n+1, n, e, h)
	}
	for _, e := range held {
		tb.release("k", e)
	}
}

// TestTableMaxKeys: past maxKeys keys holding slots, a fresh key is
// refused, never admitted without a slot; a key already holding one still
// takes up to n; a released key makes room.
func TestTableMaxKeys(t *testing.T) {
	tb := NewTable(4)
	var held []*entry
	for i := 0; i < 4; i++ {
		e, _ := tb.take("k"+strconv.Itoa(i), 2)
		if e == nil {
			t.Fatalf("key %d refused below max keys", i)
		}
		held = append(held, e)
	}
	if e, _ := tb.take("fresh", 2); e != nil {
		t.Fatal("a fresh key past max keys got a slot")
	}
	if e, _ := tb.take("k0", 2); e == nil {
		t.Fatal("a key holding one slot was refused its second")
	}
	tb.release("k1", held[1])
	if e, _ := tb.take("fresh", 2); e == nil {
		t.Fatal("a fresh key was refused once a key made room")
	}
}

// TestTableMaxKeysConcurrent: fresh keys of different shards arriving
// together never hold slots of more than maxKeys keys: the last place goes
// to one of them. Loaded, then added, it went to two (101 keys at 100,
// through caddymodule's TestInFlightFreshKeysPastMaxKeys).
func TestTableMaxKeysConcurrent(t *testing.T) {
	const maxKeys, fresh = 4, 16
	for round := 0; round < 300; round++ {
		tb := NewTable(maxKeys)
		start := make(chan struct{})
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < fresh; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if e, _ := tb.take("r"+strconv.Itoa(round)+"k"+strconv.Itoa(g), 1); e != nil {
					admitted.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if admitted.Load() != maxKeys || tb.Keys() != maxKeys {
			t.Fatalf("round %d: %d fresh keys at once at max keys %d: %d admitted, %d keys held", round, fresh, maxKeys, admitted.Load(), tb.Keys())
		}
	}
}

// TestTableReset: a reset frees a key's slots at once; the releases of
// the requests that held them free nothing of the slots taken since.
func TestTableReset(t *testing.T) {
	tb := NewTable(0)
	old, _ := tb.take("k", 1)
	if n := tb.Reset("k"); n != 1 {
		t.Fatalf("reset freed %d, want 1", n)
	}
	fresh, _ := tb.take("k", 1)
	if fresh == nil {
		t.Fatal("refused after a reset")
	}
	tb.release("k", old)
	if e, _ := tb.take("k", 1); e != nil {
		t.Fatal("the old slot's release freed the new one: 2 held with n = 1")
	}
	if tb.Held("k") != 1 || tb.Keys() != 1 {
		t.Fatalf("held %d keys %d, want 1 and 1", tb.Held("k"), tb.Keys())
	}
}
