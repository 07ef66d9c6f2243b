package resp

import (
	"bufio"
	"errors"
	"strconv"
	"strings"
)

// Reply is one RESP2 value.
type Reply struct {
	// Kind is the type byte: '+' simple string, '-' error, ':' integer,
	// '$' bulk string, '*' array.
	Kind byte
	// Str holds a simple string, error or bulk string.
	Str string
	// Int holds an integer.
	Int int64
	// Elems holds an array's elements.
	Elems []Reply
	// Nil is set for the null bulk string and the null array.
	Nil bool
	// ints holds an array of integers read by readInts instead of Elems.
	ints []int64
}

// Bounds on what a reply may hold; a server that sends more is treated as
// broken rather than trusted with our memory.
const (
	maxBulk  = 64 << 20
	maxElems = 1 << 20
	maxDepth = 8
)

// ErrProtocol reports a reply that is not valid RESP2 or exceeds the
// bounds above. The connection it came from is closed.
var ErrProtocol = errors.New("resp: protocol error")

// Error is an error reply from the server, such as "NOSCRIPT No matching
// script" or "MOVED 3999 127.0.0.1:6381". It leaves the connection usable.
type Error struct {
	// Msg is the reply's text without the leading '-'.
	Msg string
}

func (e *Error) Error() string { return e.Msg }

// readReply reads one reply from r.
func readReply(r *bufio.Reader) (Reply, error) {
	return readDepth(r, 0)
}

func readDepth(r *bufio.Reader, depth int) (Reply, error) {
	line, err := readLine(r)
	if err != nil {
		return Reply{}, err
	}
	if len(line) == 0 {
		return Reply{}, ErrProtocol
	}
	rep := Reply{Kind: line[0]}
	switch line[0] {
	case '+', '-':
		rep.Str = string(line[1:])
		return rep, nil
	case ':':
		n, ok := parseInt(line[1:])
		if !ok {
			return Reply{}, ErrProtocol
		}
		rep.Int = n
		return rep, nil
	case '$':
		n, ok := parseInt(line[1:])
		if !ok || n < -1 || n > maxBulk {
			return Reply{}, ErrProtocol
		}
		if n == -1 {
			rep.Nil = true
			return rep, nil
		}
		buf, err := readBulk(r, int(n)+2)
		if err != nil {
			return Reply{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return Reply{}, ErrProtocol
		}
		rep.Str = string(buf[:n])
		return rep, nil
	case '*':
		n, ok := parseInt(line[1:])
		if !ok || n < -1 || n > maxElems || depth >= maxDepth {
			return Reply{}, ErrProtocol
		}
		if n == -1 {
			rep.Nil = true
			return rep, nil
		}
		// Grow as elements arrive, so a huge announced count costs nothing
		// until the server actually sends it.
		size := n
		if size > 64 {
			size = 64
		}
		rep.Elems = make([]Reply, 0, int(size))
		for i := int64(0); i < n; i++ {
			e, err := readDepth(r, depth+1)
			if err != nil {
				return Reply{}, err
			}
			rep.Elems = append(rep.Elems, e)
		}
		return rep, nil
	}
	return Reply{}, ErrProtocol
}

// readInts reads a reply expected to be an array of integers, the
// limiter script's, without a Reply per element, which is many times
// faster interpreted. An error reply is returned as *Error, which leaves the
// connection usable; anything else but integers is a protocol error. It
// accepts exactly what readReply accepts as such an array (FuzzReadInts).
//
// Interpreted, every call allocates a slot for each local and temporary of
// the callee, branches taken or not, so the common case stays small: an
// array of one to nine elements, buffered whole, costs readInts and
// bufferedInts (a few calls into the standard library); anything else
// goes on in readIntsHead.
func readInts(r *bufio.Reader) ([]int64, error) {
	line, err := r.ReadSlice('\n')
	if err != nil || len(line) != 4 || line[0] != '*' || line[1] < '1' || line[1] > '9' || line[2] != '\r' {
		return readIntsHead(r, line, err)
	}
	if ints := bufferedInts(r, int(line[1]-'0')); ints != nil {
		return ints, nil
	}
	return readIntsRest(r, int64(line[1]-'0'))
}

// readIntsHead goes on with readInts after its first ReadSlice gave line
// and err, other than a short array's header.
func readIntsHead(r *bufio.Reader, line []byte, err error) ([]int64, error) {
	if err != nil {
		if err == bufio.ErrBufferFull {
			err = ErrProtocol
		}
		return nil, err
	}
	end := len(line) - 2
	if end < 1 || line[end] != '\r' || (line[0] != '*' && line[0] != '-') {
		return nil, ErrProtocol
	}
	if line[0] == '-' {
		return nil, &Error{Msg: string(line[1:end])}
	}
	n, ok := parseInt(line[1:end])
	if !ok || n < 0 || n > maxElems {
		return nil, ErrProtocol
	}
	if n > 0 && n <= maxBufferedInts {
		if ints := bufferedInts(r, int(n)); ints != nil {
			return ints, nil
		}
	}
	return readIntsRest(r, n)
}

// readIntsRest reads the n integer lines of an array one by one: each
// costs one ReadSlice, and a number of more than one digit one ParseInt.
func readIntsRest(r *bufio.Reader, n int64) ([]int64, error) {
	size := n
	if size > 64 {
		size = 64
	}
	ints := make([]int64, 0, int(size))
	for i := int64(0); i < n; i++ {
		line, err := r.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				err = ErrProtocol
			}
			return nil, err
		}
		// ":d\r\n" at least, d one or more characters.
		end := len(line) - 2
		if end < 2 || line[end] != '\r' || line[0] != ':' {
			return nil, ErrProtocol
		}
		if end == 2 && line[1] >= '0' && line[1] <= '9' {
			ints = append(ints, int64(line[1]-'0'))
			continue
		}
		v, ok := parseInt(line[1:end])
		if !ok {
			return nil, ErrProtocol
		}
		ints = append(ints, v)
	}
	return ints, nil
}

// maxBufferedInts is the longest array bufferedInts parses.
const maxBufferedInts = 16

// bufferedInts parses the n integer lines that end an array from what r
// has buffered, and consumes them. It returns nil, consuming nothing,
// when they are not all buffered or one is not an integer line as
// readInts would accept it: readInts then reads them one by one and
// reports the error. A line is a piece between CRLFs holding no other
// byte than ':', a sign and digits, so that it is the line readInts
// would read. It looks at no more of the buffer than n such lines can
// take, so that a pipelined connection's buffer of many replies is not
// copied for each.
func bufferedInts(r *bufio.Reader, n int) []int64 {
	size := r.Buffered()
	if size > n*maxIntLine {
		size = n * maxIntLine
	}
	buf, _ := r.Peek(size)
	lines := strings.SplitN(string(buf), "\r\n", n+1)
	if len(lines) <= n {
		return nil
	}
	// Few temporaries: interpreted, this frame is allocated on every reply.
	ints := make([]int64, n)
	var err error
	for i := range ints {
		if len(lines[i]) < 2 || len(lines[i]) > 21 || lines[i][0] != ':' || lines[i][1] == '+' {
			return nil
		}
		if ints[i], err = strconv.ParseInt(lines[i][1:], 10, 64); err != nil {
			return nil
		}
	}
	r.Discard(len(buf) - len(lines[n]))
	return ints
}

// maxIntLine is the longest integer line, ":" and 20 characters and CRLF.
const maxIntLine = 24

// readLine returns a line without its CRLF. The slice is valid until the
// next read.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, ErrProtocol
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, ErrProtocol
	}
	return line[:len(line)-2], nil
}

// bulkStep is the most readBulk allocates ahead of the data it has read.
const bulkStep = 64 << 10

// readBulk reads n bytes. A small read takes one allocation of n; a large
// one grows its buffer as the data arrives, so that a header announcing
// 64 MiB costs nothing until the server sends them.
func readBulk(r *bufio.Reader, n int) ([]byte, error) {
	size := n
	if size > bulkStep {
		size = bulkStep
	}
	buf := make([]byte, 0, size)
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // at most doubles what was read
		}
		end := cap(buf)
		if end > n {
			end = n
		}
		m, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// parseInt parses a decimal int64. One strconv call, rather than a loop
// over the digits, is what the interpreter runs fastest.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 || b[0] == '+' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// Ints returns an array of integers as a slice: the limiter script's reply.
func (r Reply) Ints() ([]int64, error) {
	if r.Kind == '-' {
		return nil, &Error{Msg: r.Str}
	}
	if r.Kind != '*' || r.Nil {
		return nil, errors.New("resp: reply is not an array")
	}
	if r.ints != nil {
		return r.ints, nil
	}
	out := make([]int64, len(r.Elems))
	for i, e := range r.Elems {
		if e.Kind != ':' {
			return nil, errors.New("resp: array element " + strconv.Itoa(i) + " is not an integer")
		}
		out[i] = e.Int
	}
	return out, nil
}
