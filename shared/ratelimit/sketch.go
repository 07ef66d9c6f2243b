package ratelimit

// A sketch is a shard's conservative summary of the keys it evicted while
// their window still held a count: a count-min sketch of sketchRows rows,
// each cell holding the largest count of the live keys hashed to it and
// the latest time one of them stops counting. A key that was evicted and
// comes back is seeded with the smallest of its cells: never less than
// what it had, so a forgotten key gets an over-estimate, never a fresh
// budget. The price is paid by new keys that share all their cells with
// evicted ones: they start with a count they did not earn, until those
// cells expire.
//
// Cells are written only under the shard's lock. The slabs are allocated
// at the shard's first eviction of a live key, so a zone that never fills
// up pays nothing; once allocated they never grow: sketchRows * width *
// 12 bytes per shard, width the power of two at or above twice the
// shard's key capacity (16 at least), so between 48 and 96 bytes per key
// of max_keys, against about 110 for a tracked key. Under a flood the
// cells fill with the counts of evicted keys, and new keys start with
// them: twice the capacity halves how often that happens to a new client
// in a flood of ten times max_keys a window (measured in flood_test.go:
// with limit 5 and one request per flood key, new clients got 60% of
// their budget at 1x, 78% at 2x, 90% at 4x).
type sketch struct {
	counts []uint32 // rows*width cells: the largest count of the keys in the cell
	until  []int64  // per cell: when the last of those counts stops counting
	shift  uint     // 64 - log2(width): a row's index is the top bits of its hash
	width  int
	// live is the latest until of any cell: at or after it the sketch
	// holds nothing, and new keys need not consult it.
	live int64
}

// sketchRows is the sketch's depth. Two rows already make an unearned
// estimate need two collisions; more would cost memory that a wider row
// spends better.
const sketchRows = 2

// sketchWidth returns the width of the sketch of a shard of perShard keys.
func sketchWidth(perShard int) (width int, shift uint) {
	width, shift = 16, 60
	for width < 2*perShard {
		width *= 2
		shift--
	}
	return width, shift
}

// cells returns the index of key's cell in each row. The rows use the top
// bits of the hash and of a remix of it (murmur3's finalizer); the shard
// was chosen by the low bits.
func (k *sketch) cells(key uint64) (int, int) {
	x := key
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return int(key >> k.shift), k.width + int(x>>k.shift)
}

// add records that key was evicted at t with count requests that stop
// counting at until.
func (k *sketch) add(perShard int, key uint64, count uint32, until, t int64) {
	if k.counts == nil {
		k.width, k.shift = sketchWidth(perShard)
		k.counts = make([]uint32, sketchRows*k.width)
		k.until = make([]int64, sketchRows*k.width)
	}
	a, b := k.cells(key)
	k.raise(a, count, until, t)
	k.raise(b, count, until, t)
	if until > k.live {
		k.live = until
	}
}

// raise merges a count into cell i: an expired cell is overwritten, a live
// one keeps the larger count and the later end, so that it never says less
// than any live key in it.
func (k *sketch) raise(i int, count uint32, until, t int64) {
	if k.until[i] <= t {
		k.counts[i], k.until[i] = count, until
		return
	}
	if count > k.counts[i] {
		k.counts[i] = count
	}
	if until > k.until[i] {
		k.until[i] = until
	}
}

// estimate returns, for a key created at t, the smallest count of its
// cells and the earliest end among them, or 0 when a cell is expired. The
// key, if it was evicted, is in both cells: its count was at most either
// count and stops counting by either end.
func (k *sketch) estimate(key uint64, t int64) (uint32, int64) {
	if t >= k.live {
		return 0, 0
	}
	a, b := k.cells(key)
	if k.until[a] <= t || k.until[b] <= t {
		return 0, 0
	}
	count, until := k.counts[a], k.until[a]
	if k.counts[b] < count {
		count = k.counts[b]
	}
	if k.until[b] < until {
		until = k.until[b]
	}
	return count, until
}
