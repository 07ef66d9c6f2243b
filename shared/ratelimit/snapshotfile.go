package ratelimit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"
)

// The snapshot file, all integers little-endian or unsigned varints
// (uv):
//
//	magic "WLSNAP" | version u8 | algorithm u8 | window i64 | sub_window i64
//	| taken i64 | salt [16] | name: uv length, bytes | scope: uv length, bytes
//	| keys: u64
//	| per key, buckets: id u64 | newest sub-window uv | k+1 counts uv
//	| per key, log:     id u64 | n uv | first timestamp uv | n-1 gaps uv
//	| sketch width uv (0: none) | cells written uv
//	| per cell written: index gap uv | count uv | until uv
//	| version 3 only: bans uv | per ban: id u64 | end uv (see banpersist.go)
//	| CRC-32C of everything before, u32
//
// A key of a bucket zone takes 8 bytes for its id, about 5 for its
// newest sub-window, and a byte per counter below 128 (two below 16384):
// 24 bytes at the default 10 sub-windows with small counts. A log key
// takes 8 + 1 + about 9 bytes, and about 3 to 5 per further timestamp.
const (
	snapshotMagic = "WLSNAP"
	// snapshotVersion is the newest version of the snapshot file this
	// code reads. Version 2 added the scope, version 3 the bans, which
	// only a zone with a ban writes; the others write snapshotNoBans.
	snapshotVersion = 3
	// snapshotNoBans is version 2, the file of a zone without a ban, as
	// it was before bans; this code reads it too.
	snapshotNoBans = 2
	// maxSnapshotName bounds a zone name, and a scope, in a snapshot
	// file.
	maxSnapshotName = 4096
	// maxSketchWidth bounds the summary's width in a snapshot file: that
	// of a zone of 2^25 keys in one shard. A reader allocates no more
	// than its own zone's width (see snapshotLimits).
	maxSketchWidth = 1 << 26
	// maxSnapshotHeader bounds the bytes of a header, up to and
	// including the key count.
	maxSnapshotHeader = len(snapshotMagic) + 2 + 24 + 16 + 2*(binary.MaxVarintLen64+maxSnapshotName) + 8
)

// snapshotLimits are what a reader allows a snapshot to make it
// allocate: at most keys keys, and a summary of evicted keys at most width
// wide (a wider one is folded to width as it is read).
type snapshotLimits struct {
	keys  uint64
	width int
}

// limits returns the bounds of what z reads from a snapshot: twice its
// max keys (its own keys and as many restored ones not yet claimed), and
// the summary width its shards make.
func (z *Zone) limits() snapshotLimits {
	w, _ := sketchWidth(z.perShard)
	return snapshotLimits{keys: 2 * uint64(z.maxKeys), width: w}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendHeader appends the header of a snapshot, up to and including its
// key count, which it writes as 0 and whose offset it returns for finish.
func appendHeader(b []byte, name, scope string, window, subWindow int64, a Algorithm, taken int64, salt *[16]byte) ([]byte, int) {
	b = append(b, snapshotMagic...)
	b = append(b, snapshotNoBans, byte(a))
	b = binary.LittleEndian.AppendUint64(b, uint64(window))
	b = binary.LittleEndian.AppendUint64(b, uint64(subWindow))
	b = binary.LittleEndian.AppendUint64(b, uint64(taken))
	b = append(b, salt[:]...)
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = binary.AppendUvarint(b, uint64(len(scope)))
	b = append(b, scope...)
	count := len(b)
	return binary.LittleEndian.AppendUint64(b, 0), count
}

// appendBucketEntry appends a key of a bucket zone: its id, its newest
// sub-window c and its counts of sub-windows c-k..c.
func appendBucketEntry(b []byte, id uint64, c int64, cells []uint32) []byte {
	b = binary.LittleEndian.AppendUint64(b, id)
	b = binary.AppendUvarint(b, uint64(c))
	for _, v := range cells {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

// appendLogEntry appends a key of a log zone: its id and its timestamps,
// oldest first.
func appendLogEntry(b []byte, id uint64, ts []int64) []byte {
	b = binary.LittleEndian.AppendUint64(b, id)
	b = binary.AppendUvarint(b, uint64(len(ts)))
	prev := int64(0)
	for _, v := range ts {
		b = binary.AppendUvarint(b, uint64(v-prev))
		prev = v
	}
	return b
}

// finish writes the key count at its offset, appends the summary of
// evicted keys (nil: none), the bans of a version 3 file (withBans: the
// header's version becomes 3) and the checksum.
func finish(b []byte, count, keys int, k *sketch, bans []banRecord, withBans bool) []byte {
	binary.LittleEndian.PutUint64(b[count:], uint64(keys))
	if k == nil {
		b = binary.AppendUvarint(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(k.width))
		written := 0
		for c := range k.counts {
			if k.until[c] != 0 {
				written++
			}
		}
		b = binary.AppendUvarint(b, uint64(written))
		prev := -1
		for c := range k.counts {
			if k.until[c] == 0 {
				continue
			}
			b = binary.AppendUvarint(b, uint64(c-prev))
			b = binary.AppendUvarint(b, uint64(k.counts[c]))
			b = binary.AppendUvarint(b, uint64(k.until[c]))
			prev = c
		}
	}
	if withBans {
		b[len(snapshotMagic)] = snapshotVersion
		b = appendBanSection(b, bans)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// reader decodes a snapshot, failing on the first bad value.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = errors.New("corrupt snapshot: " + what)
	}
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what + " cut short or overflowing")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) u64(what string) uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail(what + " cut short")
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// text reads a length-prefixed string of at most maxSnapshotName bytes.
func (r *reader) text(what string) string {
	n := r.uvarint(what + " length")
	if r.err == nil && (n > maxSnapshotName || n > uint64(len(r.b))) {
		r.fail(what + " too long")
	}
	if r.err != nil {
		return ""
	}
	v := string(r.b[:n])
	r.b = r.b[n:]
	return v
}

// maxSnapshotTime bounds a time in a snapshot file: every time a zone
// reads stays below it (see Zone.maxTime).
const maxSnapshotTime = int64(1) << 62

// readHeader decodes the header of a snapshot from the start of b, up to
// and including its key count, which it checks against lim. It returns
// the snapshot's shape and a reader at the key count.
func readHeader(b []byte, lim snapshotLimits) (*snapshot, *reader, error) {
	if len(b) < len(snapshotMagic)+2 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, nil, errors.New("not a windowlimit snapshot (no magic header)")
	}
	v := b[len(snapshotMagic)]
	if v != snapshotVersion && v != snapshotNoBans {
		return nil, nil, fmt.Errorf("snapshot format version %d, this build reads versions %d and %d only", v, snapshotNoBans, snapshotVersion)
	}
	r := &reader{b: b[len(snapshotMagic)+1:]}
	sn := &snapshot{version: v}
	if len(r.b) < 1+24+16 {
		return nil, nil, errors.New("corrupt snapshot: header cut short")
	}
	sn.algorithm = Algorithm(r.b[0])
	r.b = r.b[1:]
	sn.window = int64(r.u64("window"))
	sn.subWindow = int64(r.u64("sub_window"))
	sn.taken = int64(r.u64("time taken"))
	copy(sn.salt[:], r.b[:16])
	r.b = r.b[16:]
	rule := Rule{Window: time.Duration(sn.window), SubWindow: time.Duration(sn.subWindow), Limit: 1, Algorithm: sn.algorithm}
	if sn.algorithm > Log || sn.window <= 0 || sn.subWindow <= 0 || rule.Normalize() != nil ||
		rule.SubWindow != time.Duration(sn.subWindow) {
		return nil, nil, errors.New("corrupt snapshot: bad rule shape")
	}
	if sn.taken < 0 || sn.taken >= maxSnapshotTime {
		return nil, nil, errors.New("corrupt snapshot: time taken out of range")
	}
	sn.name = r.text("name")
	sn.scope = r.text("scope")
	if r.err == nil && len(r.b) >= 8 {
		if keys := binary.LittleEndian.Uint64(r.b); keys > lim.keys {
			r.err = fmt.Errorf("snapshot holds %d keys, more than the %d this zone reads (twice its max keys)", keys, lim.keys)
		}
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	return sn, r, nil
}

// unmarshalSnapshot decodes a snapshot file's bytes, checking its magic,
// version and checksum first, then every value against its bound and
// lim: a corrupt, foreign or future file is an error, never a panic, an
// allocation beyond lim or a snapshot that would loosen a limit.
func unmarshalSnapshot(data []byte, lim snapshotLimits) (*snapshot, error) {
	if len(data) < len(snapshotMagic)+2+4 {
		return nil, errors.New("not a windowlimit snapshot (no magic header)")
	}
	body := data[:len(data)-4]
	if _, _, err := readHeader(body, lim); err != nil {
		return nil, err
	}
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, errors.New("corrupt snapshot: checksum mismatch")
	}
	sn, r, err := readHeader(body, lim)
	if err != nil {
		return nil, err
	}
	keys := r.u64("key count")
	m := sn.ring()
	minKey := uint64(8 + 1 + m) // a bucket key: id, newest, m counts
	if sn.algorithm == Log {
		minKey = 8 + 2
	}
	if r.err == nil && keys > uint64(len(r.b))/minKey {
		r.fail("more keys than bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	n := int(keys)
	sn.ids = make([]uint64, n)
	if sn.algorithm == Log {
		sn.off = make([]int, n)
		sn.cnt = make([]int, n)
	} else {
		sn.newest = make([]int64, n)
		sn.cells = make([]uint32, n*m)
	}
	k := int64(m - 1)
	for j := 0; j < n && r.err == nil; j++ {
		sn.ids[j] = r.u64("key id")
		if sn.algorithm == Log {
			cnt := r.uvarint("timestamp count")
			if r.err == nil && (cnt == 0 || cnt > MaxLogLimit || cnt > uint64(len(r.b))) {
				r.fail("bad timestamp count")
			}
			// One assignment each (see the package documentation).
			sn.off[j] = len(sn.ts)
			sn.cnt[j] = int(cnt)
			prev := uint64(0)
			for i := uint64(0); i < cnt && r.err == nil; i++ {
				gap := r.uvarint("timestamp")
				if gap >= uint64(maxSnapshotTime) || prev+gap >= uint64(maxSnapshotTime) {
					r.fail("timestamp out of range")
				}
				prev += gap
				sn.ts = append(sn.ts, int64(prev))
			}
			continue
		}
		c := r.uvarint("sub-window")
		if r.err == nil && (c < uint64(k) || c >= uint64(maxSnapshotTime/sn.subWindow)) {
			r.fail("sub-window out of range")
		}
		sn.newest[j] = int64(c)
		sum := uint64(0)
		for d := 0; d < m; d++ {
			v := r.uvarint("count")
			sum += v
			if v > MaxLimit || sum > MaxLimit {
				r.fail("count out of range")
				break
			}
			sn.cells[j*m+d] = uint32(v)
		}
	}
	width := r.uvarint("sketch width")
	if r.err == nil && width != 0 {
		if width < 16 || width > maxSketchWidth || width&(width-1) != 0 {
			r.fail("bad sketch width")
		} else {
			// Read at most at the zone's own width: a wider summary is
			// folded as it is read, each cell into the one covering it.
			to := int(width)
			if to > lim.width {
				to = lim.width
			}
			sk := &sketch{width: to}
			w, shift := 16, uint(60)
			for w < to {
				w *= 2
				shift--
			}
			sk.shift = shift
			cells := uint64(sketchRows) * width
			live := r.uvarint("sketch cells")
			if r.err == nil && (live > cells || live > uint64(len(r.b))/3) {
				r.fail("more sketch cells than bytes")
			}
			if r.err == nil && live > 0 {
				sk.counts = make([]uint32, sketchRows*to)
				sk.until = make([]int64, sketchRows*to)
			}
			ratio := int64(width) / int64(to)
			prev := int64(-1)
			for i := uint64(0); i < live && r.err == nil; i++ {
				gap := r.uvarint("sketch index")
				cnt := r.uvarint("sketch count")
				until := r.uvarint("sketch time")
				if gap == 0 || gap > cells || uint64(prev)+gap >= cells {
					r.fail("sketch index out of range")
					break
				}
				if cnt > MaxLimit || until >= uint64(maxSnapshotTime) {
					r.fail("sketch cell out of range")
					break
				}
				prev += int64(gap)
				row, col := prev/int64(width), prev%int64(width)
				sk.raise(int(row*int64(to)+col/ratio), uint32(cnt), int64(until), math.MinInt64)
				if int64(until) > sk.live {
					sk.live = int64(until)
				}
			}
			if live > 0 {
				sn.sk = sk
			}
		}
	}
	if sn.version == snapshotVersion {
		sn.bans = r.readBans(lim)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return sn, nil
}

// snapshotBound returns the largest snapshot a zone of rule and maxKeys
// (0: DefaultMaxKeys) reads: twice its keys, at their largest
// encoding, and its summary of evicted keys. A bigger file is refused
// before it is read, so that no file can exhaust memory. A log zone's
// keys are bounded at 64 timestamps each, or the rule's limit if higher.
func snapshotBound(rule Rule, maxKeys int) int64 {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return snapshotSize(rule, maxKeys, 2*uint64(maxKeys))
}

// snapshotSize returns the largest snapshot of keys keys a zone of rule
// and maxKeys reads: the header, every key at its largest encoding, and
// the summary of evicted keys at the zone's width.
func snapshotSize(rule Rule, maxKeys int, keys uint64) int64 {
	perKey := int64(8 + 10)
	if rule.Algorithm == Log {
		l := rule.Limit
		if l < 64 {
			l = 64
		}
		perKey += 10 * l
	} else {
		perKey += 5 * (int64(rule.buckets()) + 1)
	}
	width, _ := sketchWidth(maxKeys)
	return 1<<16 + int64(keys)*perKey + int64(sketchRows*width)*20
}

// MaxSnapshotSize returns the most bytes Restore reads into z: a larger
// snapshot file is refused from its size alone.
func (z *Zone) MaxSnapshotSize() int64 { return snapshotBound(z.rule, z.maxKeys) + z.banBytes() }
