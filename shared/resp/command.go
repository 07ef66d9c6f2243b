package resp

import "strconv"

// A command is encoded once, into bytes that every attempt (a retry on a
// fresh connection, a cluster redirection) sends as they are. Encoding
// uses appends and tables of headers rather than a method call per
// argument: under yaegi a method call costs microseconds, an append or a
// table index tens of nanoseconds.

// askingCmd is the ASKING command that precedes one redirected by ASK.
const askingCmd = "*1\r\n$6\r\nASKING\r\n"

// arrayHeads and bulkHeads hold "*n\r\n" and "$n\r\n" for small n.
var arrayHeads, bulkHeads = heads('*'), heads('$')

func heads(kind byte) [64]string {
	var t [64]string
	for n := range t {
		t[n] = string(kind) + strconv.Itoa(n) + "\r\n"
	}
	return t
}

// appendCommand appends args as one command.
func appendCommand(b []byte, args []string) []byte {
	if len(args) < len(arrayHeads) {
		b = append(b, arrayHeads[len(args)]...)
	} else {
		b = append(b, '*')
		b = strconv.AppendInt(b, int64(len(args)), 10)
		b = append(b, '\r', '\n')
	}
	return appendBulks(b, args)
}

// appendEval appends cmd (EVAL or EVALSHA) with its script or SHA1, the
// number of keys, the keys and the arguments.
func appendEval(b []byte, cmd, body string, keys, args []string) []byte {
	n := 3 + len(keys) + len(args)
	if n < len(arrayHeads) {
		b = append(b, arrayHeads[n]...)
	} else {
		b = append(b, '*')
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, '\r', '\n')
	}
	b = appendBulks(b, []string{cmd, body, strconv.Itoa(len(keys))})
	b = appendBulks(b, keys)
	return appendBulks(b, args)
}

// appendBulks appends each of ss as a bulk string.
func appendBulks(b []byte, ss []string) []byte {
	for _, s := range ss {
		if len(s) < len(bulkHeads) {
			b = append(b, bulkHeads[len(s)]...)
		} else {
			b = append(b, '$')
			b = strconv.AppendInt(b, int64(len(s)), 10)
			b = append(b, '\r', '\n')
		}
		b = append(b, s...)
		b = append(b, '\r', '\n')
	}
	return b
}
