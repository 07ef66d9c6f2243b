package resp

import (
	"strconv"
	"strings"
)

// A command is encoded once, into a string that every attempt (a retry on
// a fresh connection, a cluster redirection) sends as it is. Encoding
// lists the pieces between CRLFs, with the headers from tables, and joins
// them in one call to strings.Join, which runs compiled (see the package
// documentation).

// askingCmd is the ASKING command that precedes one redirected by ASK.
const askingCmd = "*1\r\n$6\r\nASKING\r\n"

// arrayHeads and bulkHeads hold "*n" and "$n" for small n: for bulk
// strings, up to the length of most keys. bulkLines holds "$n\r\n", a
// prepared key's line (see Client.EvalShaPrepared).
var arrayHeads, bulkHeads, bulkLines = heads("*", 64), heads("$", bulkMax), lines(heads("$", bulkMax))

// bulkMax is the length of bulkHeads and bulkLines, a constant that
// EvalShaPrepared compares without a frame slot interpreted.
const bulkMax = 512

// lines returns each of heads followed by CRLF.
func lines(heads []string) []string {
	for n := range heads {
		heads[n] += "\r\n"
	}
	return heads
}

func heads(kind string, n int) []string {
	t := make([]string, n)
	for n := range t {
		t[n] = kind + strconv.Itoa(n)
	}
	return t
}

// encodeCommand encodes args as one command.
func encodeCommand(args []string) string {
	parts := make([]string, 0, 2+2*len(args))
	parts = append(parts, arrayHead(len(args)))
	parts = appendBulks(parts, args)
	return strings.Join(append(parts, ""), "\r\n")
}

// encodeEval encodes cmd (EVAL or EVALSHA) with its script or SHA1, the
// number of keys, the keys and the arguments.
func encodeEval(cmd, body string, keys, args []string) string {
	n := 3 + len(keys) + len(args)
	parts := make([]string, 0, 2*n+2)
	head, bodyHead, numKeys := "", "", strconv.Itoa(len(keys))
	if n < len(arrayHeads) && len(body) < len(bulkHeads) {
		head, bodyHead = arrayHeads[n], bulkHeads[len(body)]
	} else {
		head, bodyHead = "*"+strconv.Itoa(n), "$"+strconv.Itoa(len(body))
	}
	parts = append(parts, head, bulkHeads[len(cmd)], cmd, bodyHead, body, bulkHeads[len(numKeys)], numKeys)
	parts = appendBulks(parts, keys)
	parts = appendBulks(parts, args)
	return strings.Join(append(parts, ""), "\r\n")
}

func arrayHead(n int) string {
	if n < len(arrayHeads) {
		return arrayHeads[n]
	}
	return "*" + strconv.Itoa(n)
}

// appendBulks appends the header and the text of each of ss as a bulk
// string.
func appendBulks(parts []string, ss []string) []string {
	for _, s := range ss {
		if len(s) < len(bulkHeads) {
			parts = append(parts, bulkHeads[len(s)], s)
		} else {
			parts = append(parts, "$"+strconv.Itoa(len(s)), s)
		}
	}
	return parts
}

// encodePrepared encodes an EVALSHA of sha on one key with args in the
// parts before the key's bulk string and after the key (its CRLF
// included) (see Client.PrepareEvalSha).
func encodePrepared(sha string, args []string) (head, tail string) {
	head = strings.Join([]string{arrayHead(4 + len(args)), "$7", "EVALSHA", "$" + strconv.Itoa(len(sha)), sha, "$1", "1", ""}, "\r\n")
	tail = strings.Join(append(appendBulks([]string{""}, args), ""), "\r\n")
	return head, tail
}

// encodePrepared2 encodes an EVALSHA of sha on two keys, with args and a
// last argument after them, in the parts before the first key's bulk
// string and between the second key's CRLF and the last argument's bulk
// string (see Client.PrepareEvalSha2).
func encodePrepared2(sha string, args []string) (head, mid string) {
	head = strings.Join([]string{arrayHead(6 + len(args)), "$7", "EVALSHA", "$" + strconv.Itoa(len(sha)), sha, "$1", "2", ""}, "\r\n")
	mid = strings.Join(append(appendBulks(nil, args), ""), "\r\n")
	return head, mid
}
