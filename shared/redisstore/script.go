package redisstore

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

//go:generate go test -run ^TestScriptSource$ -update .

// redisScript (script_lua.go) is script.lua, the script that decides,
// refunds and resets; its header is the table of modes, arguments and
// replies. The Go string is generated from the file by go generate (see
// the package documentation), and TestScriptSource fails when the two
// differ.

// redisScript is script.lua without the lines from each "-- extra:begin"
// to its "-- extra:end": the script of every call without a ban or a
// slot, as it was before them, so that such a zone costs what it did.
// redisFullScript is script.lua whole: the script of a call on a zone
// with a ban, or of one item with an in-flight slot (see BANS and SLOT in
// it).
var (
	redisScript     = withoutExtras(redisScriptSource)
	redisFullScript = redisScriptSource
)

// redisScriptSHA and redisFullScriptSHA are the SHA1s of the scripts in
// hex, the names EVALSHA runs.
var (
	redisScriptSHA     = scriptSHA(redisScript)
	redisFullScriptSHA = scriptSHA(redisFullScript)
)

// withoutExtras returns the script s without its extra blocks.
func withoutExtras(s string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.SplitAfter(s, "\n") {
		switch strings.TrimSpace(line) {
		case "-- extra:begin":
			in = true
			continue
		case "-- extra:end":
			in = false
			continue
		}
		if !in {
			b.WriteString(line)
		}
	}
	return b.String()
}

func scriptSHA(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The script's modes of an item (see redisScript).
const (
	modeTake    = "0"
	modeReserve = "1"
	modeLease   = "2"
	modeRefund  = "3"
	modeReset   = "4"
)
