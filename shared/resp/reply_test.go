package resp

import (
	"bufio"
	"io"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

func parse(s string) (Reply, error) {
	return readReply(bufio.NewReaderSize(strings.NewReader(s), 4096))
}

func TestReadReply(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Reply
	}{
		{"+OK\r\n", Reply{Kind: '+', Str: "OK"}},
		{"-NOSCRIPT No matching script\r\n", Reply{Kind: '-', Str: "NOSCRIPT No matching script"}},
		{":-42\r\n", Reply{Kind: ':', Int: -42}},
		{":9223372036854775807\r\n", Reply{Kind: ':', Int: 9223372036854775807}},
		{":-9223372036854775808\r\n", Reply{Kind: ':', Int: -9223372036854775808}},
		{"$5\r\nhe\r\no\r\n", Reply{Kind: '$', Str: "he\r\no"}},
		{"$0\r\n\r\n", Reply{Kind: '$', Str: ""}},
		{"$-1\r\n", Reply{Kind: '$', Nil: true}},
		{"*-1\r\n", Reply{Kind: '*', Nil: true}},
		{"*0\r\n", Reply{Kind: '*', Elems: []Reply{}}},
		{"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n", Reply{Kind: '*', Elems: []Reply{{Kind: ':', Int: 1}, {Kind: '*', Elems: []Reply{{Kind: '$', Str: "x"}}}}}},
	} {
		got, err := parse(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestReadReplyRejects(t *testing.T) {
	for _, in := range []string{
		"", "\r\n", "OK\r\n", "+OK\n", "+OK", ":\r\n", ":12a\r\n", ":-\r\n",
		":9223372036854775808\r\n", ":-9223372036854775809\r\n", ":99999999999999999999\r\n",
		"$-2\r\n", "$3\r\nab\r\n", "$3\r\nabcd\r\n", "$2\r\nab", "$99999999999\r\n",
		"*-2\r\n", "*2\r\n:1\r\n", "*99999999999\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
		"+" + strings.Repeat("x", 20000) + "\r\n",
	} {
		if got, err := parse(in); err == nil {
			t.Errorf("%q: accepted as %+v", in, got)
		}
	}
}

// intsReply reads with readInts and returns what it read as a Reply, as
// readReply would: an error reply is a Reply, not an error.
func intsReply(r *bufio.Reader) (Reply, error) {
	ints, err := readInts(r)
	if e, ok := err.(*Error); ok {
		return Reply{Kind: '-', Str: e.Msg}, nil
	}
	if err != nil {
		return Reply{}, err
	}
	return Reply{Kind: '*', ints: ints}, nil
}

func TestReadInts(t *testing.T) {
	for in, want := range map[string][]int64{"*0\r\n": {}, "*3\r\n:1\r\n:0\r\n:-5\r\n": {1, 0, -5}} {
		r, err := intsReply(bufio.NewReader(strings.NewReader(in)))
		got, err2 := r.Ints()
		if err != nil || err2 != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %v, %v %v", in, got, err, err2)
		}
	}
	r, err := intsReply(bufio.NewReader(strings.NewReader("-NOSCRIPT x\r\n")))
	if _, err2 := r.Ints(); err != nil || err2 == nil || err2.Error() != "NOSCRIPT x" {
		t.Errorf("error reply: %v, %v", err, err2)
	}
	for _, in := range []string{"", "+OK\r\n", ":1\r\n", "*-1\r\n", "*2\r\n:1\r\n", "*1\r\n$1\r\n1\r\n", "*1\r\n:x\r\n", "*99999999999\r\n"} {
		if r, err := intsReply(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("%q: accepted as %+v", in, r)
		}
	}
}

// TestReadIntsInSequence: replies read back to back, whole in the buffer
// (bufferedInts) or arriving a byte at a time (one line at a time), each
// leave the next where it starts.
func TestReadIntsInSequence(t *testing.T) {
	in := "*4\r\n:1\r\n:9007199254740990\r\n:0\r\n:-59999874\r\n*2\r\n:7\r\n:-1\r\n-NOSCRIPT x\r\n*1\r\n:12\r\n"
	for name, src := range map[string]io.Reader{"buffered": strings.NewReader(in), "bytewise": iotest.OneByteReader(strings.NewReader(in))} {
		r := bufio.NewReader(src)
		for i, want := range [][]int64{{1, 9007199254740990, 0, -59999874}, {7, -1}, nil, {12}} {
			rep, err := intsReply(r)
			got, err2 := rep.Ints()
			if err != nil || (want == nil) != (err2 != nil) || (want != nil && !reflect.DeepEqual(got, want)) {
				t.Errorf("%s reply %d: %v, %v %v", name, i, got, err, err2)
			}
		}
		if _, err := intsReply(r); err != io.EOF {
			t.Errorf("%s: after the last reply: %v", name, err)
		}
	}
}

func TestInts(t *testing.T) {
	r, _ := parse("*3\r\n:1\r\n:0\r\n:-5\r\n")
	got, err := r.Ints()
	if err != nil || !reflect.DeepEqual(got, []int64{1, 0, -5}) {
		t.Fatalf("Ints = %v, %v", got, err)
	}
	for _, in := range []string{"*1\r\n$1\r\n1\r\n", ":1\r\n", "*-1\r\n", "-ERR x\r\n"} {
		r, _ := parse(in)
		if _, err := r.Ints(); err == nil {
			t.Errorf("%q: Ints accepted it", in)
		}
	}
}

// FuzzReadReply: no input makes the parser panic, hang or allocate beyond
// its bounds, and whatever it accepts it parses consistently.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "-ERR x\r\n", ":1\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n",
		"*2\r\n:1\r\n$1\r\nx\r\n", "*1\r\n*1\r\n*1\r\n:0\r\n", "$99999999999\r\n", "*1000000\r\n",
		":-9223372036854775808\r\n", "*3\r\n*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := readReply(bufio.NewReaderSize(strings.NewReader(string(in)), 4096))
		if err != nil {
			return
		}
		switch r.Kind {
		case '+', '-', ':', '$', '*':
		default:
			t.Fatalf("accepted kind %q", r.Kind)
		}
		r.Ints()
	})
}

// FuzzReadInts: the integer-array reader never panics either, and agrees
// with the general reader on what it accepts.
func FuzzReadInts(f *testing.F) {
	for _, s := range []string{"*2\r\n:1\r\n:-2\r\n", "-ERR x\r\n", "*1\r\n$1\r\nx\r\n", "*3\r\n:1\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ri := bufio.NewReaderSize(strings.NewReader(string(in)), 4096)
		r, err := intsReply(ri)
		if err != nil {
			return
		}
		rg := bufio.NewReaderSize(strings.NewReader(string(in)), 4096)
		g, gerr := readReply(rg)
		if gerr != nil {
			t.Fatalf("readInts accepted what readReply rejects: %v", gerr)
		}
		// Both consumed the same bytes: the next reply starts where it should.
		resti, _ := io.ReadAll(ri)
		restg, _ := io.ReadAll(rg)
		if string(resti) != string(restg) {
			t.Fatalf("readInts left %q, readReply %q", resti, restg)
		}
		a, aerr := r.Ints()
		b, berr := g.Ints()
		if (aerr == nil) != (berr == nil) || !reflect.DeepEqual(a, b) {
			t.Fatalf("readInts %v %v, readReply %v %v", a, aerr, b, berr)
		}
	})
}

func TestSlot(t *testing.T) {
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16 = %#x, want 0x31c3", got)
	}
	// Slots as CLUSTER KEYSLOT reports them.
	for key, want := range map[string]int{
		"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{user1000}.followers": 3443,
		"foo{}{bar}": 8363, "foo{{bar}}zap": 4015, "foo{bar}{zap}": 5061, "": 0,
	} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestRedirection(t *testing.T) {
	for _, tc := range []struct {
		msg   string
		moved bool
		slot  int
		addr  string
	}{
		{"MOVED 3999 127.0.0.1:6381", true, 3999, "127.0.0.1:6381"},
		{"ASK 3999 127.0.0.1:6381", false, 3999, "127.0.0.1:6381"},
		{"MOVED x 127.0.0.1:6381", false, 0, ""},
		{"MOVED 1", false, 0, ""},
		{"ERR MOVED 1 a:1", false, 0, ""},
		{"ASK 1 nohostport", false, 0, ""},
	} {
		moved, slot, addr := redirection(tc.msg)
		if moved != tc.moved || slot != tc.slot || addr != tc.addr {
			t.Errorf("%q: got %v %d %q", tc.msg, moved, slot, addr)
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLyingHeader: a header that announces the largest allowed reply costs
// memory only as its data arrives, so a server (or whatever answers on its
// address) cannot make the client allocate 64 MiB with a dozen bytes.
func TestLyingHeader(t *testing.T) {
	for _, in := range []string{
		"$" + strconv.Itoa(maxBulk) + "\r\nabc",
		"*" + strconv.Itoa(maxElems) + "\r\n:1\r\n",
		"*2\r\n$" + strconv.Itoa(maxBulk) + "\r\nabc",
	} {
		var err error
		n := allocated(func() { _, err = parse(in) })
		if err == nil {
			t.Errorf("%q: accepted", in[:12])
		}
		if n > 1<<20 {
			t.Errorf("%q: a truncated reply allocated %d bytes", in[:12], n)
		}
		n = allocated(func() { _, err = intsReply(bufio.NewReaderSize(strings.NewReader(in), 4096)) })
		if err == nil {
			t.Errorf("%q: readInts accepted it", in[:12])
		}
		if n > 1<<20 {
			t.Errorf("%q: readInts of a truncated reply allocated %d bytes", in[:12], n)
		}
	}
	// A real reply larger than the first buffer is still read whole, and
	// one over the bound is refused.
	big := strings.Repeat("x", 3*bulkStep+5)
	r, err := parse("$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n")
	if err != nil || r.Str != big {
		t.Fatalf("bulk string of %d bytes: got %d bytes, %v", len(big), len(r.Str), err)
	}
	if _, err := parse("$" + strconv.Itoa(maxBulk+1) + "\r\n"); err != ErrProtocol {
		t.Fatalf("bulk string over the bound: %v", err)
	}
}
