package redistest

import (
	"encoding/binary"
	"sort"
	"testing"
)

// StoredCount returns the total a sliding-window key holds in s (0 for
// none), read from its string as shared/redisstore/script.lua lays it out:
// the shape (an int64, negative in the lean layout, positive in the full
// one), the newest sub-window's index (7 bytes), then the total in w
// bytes, the k+1 cells, and in the full layout the leased units (w bytes)
// and the generation (4 bytes). The end-to-end tests of both hosts read the
// counts Redis holds with it.
func (s *Server) StoredCount(tb testing.TB, key string) int64 {
	tb.Helper()
	v := s.Do(tb, "GET", key)[0]
	if v == "" {
		return 0
	}
	if len(v) < 16 {
		tb.Fatalf("GET %s: %q is no sliding-window key", key, v)
	}
	shape := int64(binary.LittleEndian.Uint64([]byte(v[:8])))
	full := shape > 0
	if !full {
		shape = -shape
	}
	k := int(shape%1024) / 4
	w := (len(v) - 15) / (k + 2)
	if full {
		w = (len(v) - 19) / (k + 3)
	}
	if w < 1 || w > 6 {
		tb.Fatalf("GET %s: %d bytes, k %d, full %v: no width", key, len(v), k, full)
	}
	var total int64
	for i := w - 1; i >= 0; i-- {
		total = total<<8 | int64(v[15+i])
	}
	return total
}

// Keys returns the keys of s that match pattern, sorted.
func (s *Server) Keys(tb testing.TB, pattern string) []string {
	tb.Helper()
	ks := s.Do(tb, "KEYS", pattern)
	sort.Strings(ks)
	return ks
}

// ScriptCalls returns how many script calls (EVALSHA and EVAL) s has
// served since its statistics were last reset.
func (s *Server) ScriptCalls(tb testing.TB) int64 {
	tb.Helper()
	calls := Calls(tb, s.Addr())
	return calls["evalsha"] + calls["eval"]
}
