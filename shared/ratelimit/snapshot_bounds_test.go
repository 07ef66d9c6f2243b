package ratelimit

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// testLimits are the reader's bounds for tests that decode snapshots of
// no particular zone: wide enough for every snapshot they make.
var testLimits = snapshotLimits{keys: 1 << 22, width: 1 << 16}

// craftSnapshot returns a snapshot file of a bucket zone "z" of a
// minute, of scope, claiming keys keys, with tail after the key count and
// a valid checksum: what a hostile or broken writer could leave.
func craftSnapshot(scope string, keys uint64, tail []byte) []byte {
	var salt [16]byte
	b, count := appendHeader(nil, "z", scope, int64(time.Minute), int64(6*time.Second), Sliding, 1_800_000_000e9, &salt)
	binary.LittleEndian.PutUint64(b[count:], keys)
	b = append(b, tail...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// TestSnapshotWideSummary: a tiny file whose summary of evicted keys
// claims a huge width costs its reader no more than the zone's own
// summary: it is folded to the zone's width as it is read, and still
// counts.
func TestSnapshotWideSummary(t *testing.T) {
	const width = 1 << 22 // 100 MB of cells at the file's width
	at := time.Unix(1_800_000_000, 0)
	until := uint64(at.Add(time.Minute).UnixNano())
	var tail []byte
	tail = binary.AppendUvarint(tail, width)
	tail = binary.AppendUvarint(tail, 2) // cells written: one in each row
	tail = binary.AppendUvarint(tail, width-1)
	tail = binary.AppendUvarint(tail, 7)
	tail = binary.AppendUvarint(tail, until)
	tail = binary.AppendUvarint(tail, width)
	tail = binary.AppendUvarint(tail, 7)
	tail = binary.AppendUvarint(tail, until)
	file := craftSnapshot("", 0, tail)
	z := persistZone(t, "z", Rule{Window: time.Minute, Limit: 5}, 1000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := z.Restore(bytes.NewReader(file), at)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Fatalf("a %d-byte file allocated %d bytes on restore, want at most 4 MiB", len(file), grew)
	}
	if z.persist.sketch == nil || z.persist.sketch.width != z.limits().width {
		t.Fatalf("summary not folded to the zone's width %d", z.limits().width)
	}
}

// countingReader counts what is read from it: zeros, without end.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestSnapshotKeyCountBound: a header that claims more keys than twice the
// zone's max keys is refused from the header alone, and one that claims a
// few keys is read no further than a few keys take, however much follows.
func TestSnapshotKeyCountBound(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	z := persistZone(t, "z", Rule{Window: time.Minute, Limit: 5}, 1000)
	head := craftSnapshot("", 1<<40, nil)
	head = head[:len(head)-4]
	r := &countingReader{r: io.MultiReader(bytes.NewReader(head), zeros{})}
	if _, err := z.Restore(r, at); err == nil || !strings.Contains(err.Error(), "more than the 2000 this zone reads") {
		t.Fatalf("2^40 keys claimed: %v", err)
	}
	if r.n > int64(maxSnapshotHeader) {
		t.Fatalf("read %d bytes to refuse a header, want at most %d", r.n, maxSnapshotHeader)
	}
	few := craftSnapshot("", 3, nil)
	few = few[:len(few)-4]
	r = &countingReader{r: io.MultiReader(bytes.NewReader(few), zeros{})}
	if _, err := persistZone(t, "z", Rule{Window: time.Minute, Limit: 5}, 1000).Restore(r, at); err == nil {
		t.Fatal("endless zeros after a header restored")
	}
	if bound := snapshotSize(z.rule, z.maxKeys, 3) + int64(maxSnapshotHeader); r.n > bound {
		t.Fatalf("read %d bytes of a snapshot of 3 keys, want at most %d", r.n, bound)
	}
}

// TestSnapshotScope: a snapshot goes back only into a zone of its scope
// (the host's key template): {remote_host} and {client_ip} are two zones.
func TestSnapshotScope(t *testing.T) {
	rule := Rule{Window: time.Minute, Limit: 5}
	at := time.Unix(1_800_000_000, 0)
	mk := func(scope string) *Zone {
		z, err := NewZone("login", rule, Options{SweepInterval: -1, Persist: true, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(z.Close)
		return z
	}
	z := mk("{remote_host}")
	TakeAt(z, "203.0.113.7", at)
	var buf bytes.Buffer
	if _, err := z.Snapshot(&buf, at); err != nil {
		t.Fatal(err)
	}
	if _, err := mk("{client_ip}").Restore(bytes.NewReader(buf.Bytes()), at); err == nil || !strings.Contains(err.Error(), `scope "{remote_host}"`) {
		t.Fatalf("restored into another scope: %v", err)
	}
	if n, err := mk("{remote_host}").Restore(bytes.NewReader(buf.Bytes()), at); err != nil || n != 1 {
		t.Fatalf("same scope: %d keys, %v", n, err)
	}
	if ZoneID("login", rule, Options{Scope: "a"}) == ZoneID("login", rule, Options{Scope: "b"}) {
		t.Fatal("two scopes share a ZoneID")
	}
}
