package resp

import (
	"bufio"
	"strings"
	"testing"
)

// TestEncoding: commands encode as RESP arrays of bulk strings, with long
// arguments and many of them past the header tables; clusterSlotsCmd is
// what encodeCommand makes of CLUSTER SLOTS.
func TestEncoding(t *testing.T) {
	long := strings.Repeat("x", 100)
	many := make([]string, 70)
	for i := range many {
		many[i] = "a"
	}
	for _, args := range [][]string{{"PING"}, {"GET", ""}, {"SET", long, "1"}, many} {
		rep, err := readReply(bufio.NewReader(strings.NewReader(encodeCommand(args))))
		if err != nil || len(rep.Elems) != len(args) {
			t.Fatalf("%q: %+v, %v", args, rep, err)
		}
		for i, e := range rep.Elems {
			if e.Kind != '$' || e.Str != args[i] {
				t.Fatalf("%q: element %d is %+v", args, i, e)
			}
		}
	}
	if want := encodeCommand([]string{"CLUSTER", "SLOTS"}); clusterSlotsCmd != want {
		t.Errorf("clusterSlotsCmd %q, want %q", clusterSlotsCmd, want)
	}
	got := encodeEval("EVALSHA", "abc", []string{"k"}, many[:61])
	want := "*65\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n1\r\n$1\r\nk\r\n" + strings.Repeat("$1\r\na\r\n", 61)
	if got != want {
		t.Errorf("appendEval: %q, want %q", got, want)
	}
}
