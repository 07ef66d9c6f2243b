package ratelimit

import "time"

// logRing holds the admitted timestamps of one key, oldest first, in a
// ring that grows on demand up to the limit.
type logRing struct {
	ts     []int64
	head   int   // index of the oldest timestamp
	n      int   // timestamps held
	newest int64 // the newest admitted (or seeded) timestamp held; before any, when the key was created
}

func (r *logRing) reset(t int64) { r.head, r.n, r.newest = 0, 0, t }

// release drops the ring's memory when its key is deleted.
func (r *logRing) release() { *r = logRing{} }

// at returns the i-th oldest timestamp.
func (r *logRing) at(i int) int64 { return r.ts[(r.head+i)%len(r.ts)] }

// push appends t, growing the ring (never past limit, which the caller
// guarantees is not exceeded).
func (r *logRing) push(t int64, limit int) {
	if r.n == len(r.ts) {
		size := 2 * len(r.ts)
		if size < 4 {
			size = 4
		}
		if size > limit {
			size = limit
		}
		if size <= r.n {
			size = r.n + 1 // the key's limit fell: keep what it holds
		}
		grown := make([]int64, size)
		for i := 0; i < r.n; i++ {
			grown[i] = r.at(i)
		}
		r.ts, r.head = grown, 0
	}
	r.ts[(r.head+r.n)%len(r.ts)] = t
	r.n++
}

// remove deletes up to n of the timestamps equal to t, and reports
// whether it found one. The ring stays in order, and newest is the newest
// it still holds: a clock that went back counts there, as in a remote
// store's script, whose newest score went with the entry.
func (r *logRing) remove(t int64, n int) bool {
	found := false
	for i := r.n - 1; i >= 0 && n > 0; i-- {
		v := r.at(i)
		if v < t {
			break // in order: no older entry is t
		}
		if v != t {
			continue
		}
		for j := i; j < r.n-1; j++ {
			r.ts[(r.head+j)%len(r.ts)] = r.at(j + 1)
		}
		r.n--
		n--
		found = true
	}
	if found && r.n > 0 {
		r.newest = r.at(r.n - 1)
	}
	return found
}

// logAt returns the time a request at t counts at for the log r (the
// newest timestamp held, if the clock went back, as a remote store does)
// and how many timestamps at its head left the window by then.
func logAt(z *Zone, r *logRing, t int64) (int64, int) {
	if r.n > 0 && t < r.newest {
		t = r.newest
	}
	old := 0
	for old < r.n && r.at(old) <= t-z.window {
		old++
	}
	return t, old
}

// takeLog implements Log: a request at t counts the admitted timestamps in
// (t-W, t] against limit, the key's N.
func takeLog(z *Zone, s *shard, name string, key uint64, t int64, limit int, commit bool) Decision {
	slot, ok := s.index[key]
	if !ok {
		slot = newSlot(z, s, name, key, t, int64(limit))
	}
	r := &s.logs[slot]
	// Only an admission removes the timestamps that left the window: a
	// denial changes nothing, as in a remote store's script, so a clock
	// that goes back finds what the remote store would.
	t, old := logAt(z, r, t)
	n := r.n - old
	d := Decision{Limit: int64(limit)}
	cost := int(z.rule.Cost)
	if n+cost <= limit {
		d.Allowed = true
		d.Remaining = int64(limit - n - cost)
		d.ResetAfter = time.Duration(z.window)
		if commit {
			if old > 0 {
				r.head = (r.head + old) % len(r.ts)
				r.n = n
			}
			for i := 0; i < cost; i++ {
				r.push(t, limit)
			}
			r.newest = t
		}
		return d
	}
	if n < limit { // a key whose limit fell may hold more
		d.Remaining = int64(limit - n)
	}
	// The (n+cost-limit)-th oldest timestamp in the window must leave it
	// first.
	d.RetryAfter = time.Duration(r.at(old+n+cost-limit-1) + z.window - t)
	d.ResetAfter = time.Duration(r.at(r.n-1) + z.window - t)
	return d
}

// load returns what evicting the key of r at t would forget: the number of
// its timestamps that count at t, and when the newest stops counting.
func (r *logRing) load(z *Zone, t int64) (uint32, int64) {
	if r.n == 0 {
		return 0, 0
	}
	_, old := logAt(z, r, t)
	return uint32(r.n - old), r.newest + z.window
}
