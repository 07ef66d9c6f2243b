package ratelimit

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"
)

// Snapshot writes to w the state of every key of the zone that counts at
// now, with its summary of evicted keys, in the snapshot format (see
// snapshotfile.go), and returns how many keys it wrote. It locks one
// shard at a time, never the whole zone, and encodes each shard from a
// copy of its slabs. It fails for a zone without Options.Persist.
func (z *Zone) Snapshot(w io.Writer, now time.Time) (int, error) {
	if z.persist == nil {
		return 0, errors.New("zone " + strconv.Quote(z.name) + " keeps no snapshots (Options.Persist is off)")
	}
	// About 8 bytes of id, 5 of sub-window and one a counter a key, and
	// a little more, so that append does not double the buffer: the keys
	// tracked and those restored and not seen since.
	n := z.Len() + z.persist.waitingLen()
	data, keys := z.appendSnapshot(z.persist.takeBuf(4096+n*(8+6+int(z.m))), now)
	_, err := w.Write(data)
	z.persist.putBuf(data)
	if err != nil {
		return 0, err
	}
	return keys, nil
}

// Restore reads a snapshot from r and puts it into z, which must be new:
// empty, and taking no request before Restore returns. It reads the
// header first and refuses a snapshot of more keys than twice z's max
// keys; then it reads r whole, and at most the bytes that many keys can
// take, before it uses any of it: a corrupt, foreign, future or oversized
// snapshot is an error and leaves z empty. The snapshot must be of a zone
// of z's name, scope, window, sub-window and algorithm; the limit may
// differ. Keys whose window is over at now are dropped. It returns how
// many keys it restored.
func (z *Zone) Restore(r io.Reader, now time.Time) (int, error) {
	if z.persist == nil {
		return 0, errors.New("zone " + strconv.Quote(z.name) + " keeps no snapshots (Options.Persist is off)")
	}
	lim := z.limits()
	br := bufio.NewReaderSize(r, maxSnapshotHeader)
	head, err := br.Peek(maxSnapshotHeader)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("reading snapshot: %w", err)
	}
	_, hr, err := readHeader(head, lim)
	if err != nil {
		return 0, err
	}
	max := snapshotBound(z.rule, z.maxKeys)
	if len(hr.b) >= 8 {
		keys := binary.LittleEndian.Uint64(hr.b)
		if n := snapshotSize(z.rule, z.maxKeys, keys); n < max {
			max = n
		}
	}
	max += z.banBytes()
	data, err := io.ReadAll(io.LimitReader(br, max+1))
	if err != nil {
		return 0, fmt.Errorf("reading snapshot: %w", err)
	}
	if int64(len(data)) > max {
		return 0, fmt.Errorf("snapshot is more than the %d bytes a zone of %d keys can take", max, z.maxKeys)
	}
	sn, err := unmarshalSnapshot(data, lim)
	if err != nil {
		return 0, err
	}
	return z.restore(sn, now)
}

// snapshot is the state of a zone's keys at one moment, in wall-clock
// time: what Zone.Snapshot writes and Zone.Restore puts into the zone of
// the next process. It holds, per key that still counts, its portable id
// (see persistState) and its counts: for the bucket algorithms the k+1
// sub-window counters of its ring, by absolute sub-window index (Unix
// nanoseconds divided by the sub-window); for Log its admitted
// timestamps. It also holds the zone's summary of evicted keys, every
// shard's folded into one. A key's generation, its cached denial and its
// receipts do not survive: a restored key starts a new generation.
type snapshot struct {
	name      string
	scope     string
	window    int64
	subWindow int64
	algorithm Algorithm
	taken     int64
	salt      [16]byte

	ids []uint64
	// Bucket algorithms: newest[j] is key j's newest sub-window c, and
	// cells[j*m:(j+1)*m] its counts of sub-windows c-k..c.
	newest []int64
	cells  []uint32
	// Log: key j's timestamps are ts[off[j]:off[j]+cnt[j]], oldest first.
	off []int
	cnt []int
	ts  []int64
	// sk is the summary of evicted keys, indexed by id; nil if empty.
	sk *sketch
	// version is the file's; bans are those of a version 3 file.
	version byte
	bans    []banRecord
}

// ring returns k+1, the counters per key of the snapshot's bucket
// algorithm (0 for Log).
func (sn *snapshot) ring() int {
	if sn.algorithm == Log || sn.subWindow <= 0 {
		return 0
	}
	return int(sn.window/sn.subWindow) + 1
}

// reach returns how many sub-windows a count stays counted for.
func (sn *snapshot) reach() int64 {
	if sn.algorithm == Fixed {
		return 1
	}
	return int64(sn.ring())
}

// shape names the identity and the rule's shape, for errors.
func shape(name, scope string, window, subWindow int64, a Algorithm) string {
	return strconv.Quote(name) + " (scope " + strconv.Quote(scope) + ", window " + time.Duration(window).String() +
		", sub_window " + time.Duration(subWindow).String() + ", " + a.String() + ")"
}

// matches returns an error unless the snapshot is of a zone of z's name,
// scope, window, sub-window and algorithm: the limit, the cost and
// max_keys may differ (counts never depend on them).
func (sn *snapshot) matches(z *Zone) error {
	if sn.name != z.name || sn.scope != z.persist.scope || sn.window != z.window || sn.subWindow != z.span || sn.algorithm != z.rule.Algorithm {
		return errors.New("snapshot is of zone " + shape(sn.name, sn.scope, sn.window, sn.subWindow, sn.algorithm) +
			", not of " + shape(z.name, z.persist.scope, z.window, z.span, z.rule.Algorithm))
	}
	return nil
}

// shardCopy is a bucket shard's slabs, copied under its lock so that the
// snapshot is built without it: a memmove of about 80 bytes per key
// holds the lock, where walking the index map would hold it ten times
// longer.
type shardCopy struct {
	heads  []head
	counts []uint32
	ids    []uint64
	free   []uint32
	isFree []bool
}

// take copies the slabs of s, and folds its summary of evicted keys into
// *sk, under s's lock; then marks the free slots.
func (cp *shardCopy) take(s *shard, sk **sketch) {
	s.Lock()
	cp.heads = append(cp.heads[:0], s.heads...)
	cp.counts = append(cp.counts[:0], s.counts...)
	cp.ids = append(cp.ids[:0], s.ids...)
	cp.free = append(cp.free[:0], s.free...)
	if s.evicted.counts != nil {
		*sk = foldInto(*sk, &s.evicted)
	}
	s.Unlock()
	cp.isFree = append(cp.isFree[:0], make([]bool, len(cp.heads))...)
	for _, i := range cp.free {
		cp.isFree[i] = true
	}
}

// cells writes into out the counts of the key in slot i of the copy, by
// sub-window from c-k to c, its ring as settle would write it, and
// returns c; or -1 for slot 0, a free slot (a key deleted: swept,
// evicted, reset) or a key that counts nothing. A key whose window is over
// is kept, as the zone keeps it until its sweeper runs: a clock that
// steps back across the restart finds what it would have found without
// one; Restore drops what is over by its own clock.
func (cp *shardCopy) cells(z *Zone, i int, out []uint32) int64 {
	h := &cp.heads[i]
	if i == 0 || cp.isFree[i] || h.inside == 0 && h.leaving == 0 {
		return -1
	}
	ring := cp.counts[int64(i)*z.m : int64(i+1)*z.m]
	c := h.end/z.span - 1
	for d := int64(0); d < z.k; d++ {
		out[d] = ring[(c-z.k+d)%z.m]
	}
	out[z.k] = newestCount(z, ring, h)
	return c
}

// entryUntil returns when entry j stops counting.
func (sn *snapshot) entryUntil(j int) int64 {
	if sn.algorithm == Log {
		return sn.ts[sn.off[j]+sn.cnt[j]-1] + sn.window
	}
	return (sn.newest[j] + sn.reach()) * sn.subWindow
}

// entryLoad returns what entry j counts at t, with the sub-window leaving
// the window counted whole, and when that stops counting.
func (sn *snapshot) entryLoad(z *Zone, j int, t int64) (int64, int64) {
	until := sn.entryUntil(j)
	if until <= t {
		return 0, until
	}
	n := int64(0)
	if sn.algorithm == Log {
		for _, v := range sn.ts[sn.off[j] : sn.off[j]+sn.cnt[j]] {
			if v > t-sn.window {
				n++
			}
		}
		return n, until
	}
	m := int64(sn.ring())
	c := sn.newest[j]
	for d := int64(0); d < m; d++ {
		if b := c - m + 1 + d; b > t/sn.subWindow-sn.reach() {
			n += int64(sn.cells[int64(j)*m+d])
		}
	}
	return n, until
}

// restoreEntry writes entry j into slot i of the locked shard s, just
// created at t for a key whose limit is limit: exactly the ring, or the
// log, the previous process held.
func (sn *snapshot) restoreEntry(z *Zone, s *shard, i uint32, j int, t int64, limit int64) {
	if z.log {
		r := &s.logs[i]
		r.reset(t)
		n := sn.cnt[j]
		lim := int(limit)
		if lim < n {
			lim = n
		}
		for _, v := range sn.ts[sn.off[j] : sn.off[j]+n] {
			r.push(v, lim)
		}
		r.newest = sn.ts[sn.off[j]+n-1]
		return
	}
	c := sn.newest[j]
	cells := sn.cells[int64(j)*z.m : int64(j+1)*z.m]
	base := int64(i) * z.m
	ring := s.counts[base : base+z.m]
	for d := int64(0); d < z.m; d++ {
		ring[(c-z.k+d)%z.m] = cells[d]
	}
	s.heads[i] = headAt(z, ring, c, c)
}

// foldInto is fold into dst, which it allocates at src's width if nil,
// and returns.
func foldInto(dst, src *sketch) *sketch {
	if dst == nil {
		dst = &sketch{width: src.width, shift: src.shift,
			counts: make([]uint32, sketchRows*src.width), until: make([]int64, sketchRows*src.width)}
	}
	for c := range src.counts {
		if src.until[c] == 0 {
			continue // never written
		}
		row, col := c/src.width, c%src.width
		lo := col // the cells of dst that col covers: [lo, hi)
		hi := col + 1
		if src.width > dst.width {
			lo = col / (src.width / dst.width)
			hi = lo + 1
		} else if src.width < dst.width {
			f := dst.width / src.width
			lo = col * f
			hi = (col + 1) * f
		}
		for d := lo; d < hi; d++ {
			dst.raise(row*dst.width+d, src.counts[c], src.until[c], math.MinInt64)
		}
		if src.until[c] > dst.live {
			dst.live = src.until[c]
		}
	}
	return dst
}

// merge folds entry j2 into entry j, both of the same key (a key the
// previous process claimed while its snapshot was taken, or ids that
// collided): the result counts, at every time, at least what either did.
func (sn *snapshot) merge(j, j2 int) {
	if sn.algorithm == Log {
		// Each timestamp as often as the entry that holds it most often
		// does: a key claimed while its snapshot was taken holds its
		// restored timestamps in both entries, and counts them once.
		a := sn.ts[sn.off[j] : sn.off[j]+sn.cnt[j]]
		b := sn.ts[sn.off[j2] : sn.off[j2]+sn.cnt[j2]]
		sort.Slice(a, func(x, y int) bool { return a[x] < a[y] }) // as Snapshot writes them; a file may lie
		sort.Slice(b, func(x, y int) bool { return b[x] < b[y] })
		all := make([]int64, 0, len(a)+len(b))
		for len(a) > 0 || len(b) > 0 {
			var v int64
			switch {
			case len(b) == 0 || len(a) > 0 && a[0] < b[0]:
				v = a[0]
				a = a[1:]
			case len(a) == 0 || b[0] < a[0]:
				v = b[0]
				b = b[1:]
			default: // the same timestamp in both
				v = a[0]
				a = a[1:]
				b = b[1:]
			}
			all = append(all, v)
		}
		if len(all) > MaxLogLimit {
			all = all[len(all)-MaxLogLimit:]
		}
		sn.off[j] = len(sn.ts)
		sn.cnt[j] = len(all)
		sn.ts = append(sn.ts, all...)
		return
	}
	m := int64(sn.ring())
	c1, c2 := sn.newest[j], sn.newest[j2]
	c := c1
	if c2 > c {
		c = c2
	}
	at := func(e int, ce, b int64) uint32 {
		if d := b - (ce - m + 1); d >= 0 && d < m {
			return sn.cells[int64(e)*m+d]
		}
		return 0
	}
	merged := make([]uint32, m)
	for d := int64(0); d < m; d++ {
		b := c - m + 1 + d
		v := at(j, c1, b)
		if w := at(j2, c2, b); w > v {
			v = w
		}
		merged[d] = v
	}
	sn.newest[j] = c
	copy(sn.cells[int64(j)*m:], merged)
}

// restore puts what sn holds into z, which must be empty and take no
// request before Restore returns: z adopts sn's salt, so that its keys
// get the ids they had. sn must be of a zone of z's name, window,
// sub-window and algorithm; the limit may differ. Keys whose window is
// over at now are dropped; the others are claimed by their first
// request, exactly as they were (a clock that went back counts them as a
// clock step does: in their newest sub-window), and new keys consult
// the restored summary of evicted keys. Restore keeps sn: the caller
// must not use it afterwards. It returns how many keys it restored.
func (z *Zone) restore(sn *snapshot, now time.Time) (int, error) {
	p := z.persist
	if p == nil {
		return 0, errors.New("zone " + strconv.Quote(z.name) + " keeps no snapshots (Options.Persist is off)")
	}
	if err := sn.matches(z); err != nil {
		return 0, err
	}
	if z.Len() > 0 {
		return 0, errors.New("zone " + strconv.Quote(z.name) + " already holds keys: a snapshot is restored into a new zone only")
	}
	t := now.UnixNano()
	sk := sn.sk
	if sk != nil && t >= sk.live {
		sk = nil
	}
	// While a restored summary of evicted keys counts, a key whose own
	// window is over stays as it was, counting nothing: it was tracked,
	// and a tracked key does not consult the summary.
	keepOver := sk != nil
	pending := make(map[uint64]int, len(sn.ids))
	live, restored := int64(0), 0
	for j, id := range sn.ids {
		until := sn.entryUntil(j)
		if until <= t && !keepOver {
			continue
		}
		if j0, dup := pending[id]; dup {
			sn.merge(j0, j)
			until = sn.entryUntil(j0)
		} else {
			pending[id] = j
			if until > t {
				restored++
			}
		}
		if until > live {
			live = until
		}
	}
	if sk != nil && sk.live > live {
		live = sk.live
	}
	p.adopt(sn, pending, sk, live)
	if z.ban > 0 {
		p.adoptBans(sn.bans, t)
	}
	return restored, nil
}
