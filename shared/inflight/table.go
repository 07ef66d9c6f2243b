package inflight

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// shardCount is how many locks a Table's keys are spread over.
const shardCount = 16

// Table holds the in-flight slots of one zone in memory. It is safe for
// concurrent use.
type Table struct {
	seed    maphash.Seed
	shards  [shardCount]tableShard
	maxKeys int64
	keys    int64 // atomic: entries in every shard
}

type tableShard struct {
	mu sync.Mutex
	m  map[string]*entry
}

// entry is a key's slots: it is in its shard's map only while held > 0.
// An entry an operator's reset removed keeps taking its holders' releases,
// which then free nothing of the key's new entry.
type entry struct {
	held  int64
	shard *tableShard // its key's: a release hashes nothing
}

// NewTable returns a table of at most maxKeys keys holding slots at once
// (0 for no bound).
func NewTable(maxKeys int) *Table {
	t := &Table{seed: maphash.MakeSeed(), maxKeys: int64(maxKeys)}
	for i := range t.shards {
		t.shards[i].m = make(map[string]*entry)
	}
	return t
}

func (t *Table) shard(key string) *tableShard {
	return &t.shards[maphash.String(t.seed, key)%shardCount]
}

// Held returns how many slots key holds now.
func (t *Table) Held(key string) int64 {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[key]; e != nil {
		return e.held
	}
	return 0
}

// Reset frees every slot of key and returns how many there were. The
// requests that hold them run on; their releases free nothing of the
// slots taken after the reset.
func (t *Table) Reset(key string) int64 {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[key]
	if e == nil {
		return 0
	}
	delete(s.m, key)
	atomic.AddInt64(&t.keys, -1)
	return e.held
}

// Keys returns how many keys hold slots now.
func (t *Table) Keys() int64 { return atomic.LoadInt64(&t.keys) }
