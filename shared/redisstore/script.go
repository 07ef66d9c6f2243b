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

// redisScript is script.lua without the lines from each "-- ban:begin" to
// its "-- ban:end": the script of every call without a ban, as it was
// before bans, so that a zone without a ban costs what it did.
// redisBanScript is script.lua whole: the script of a call on a zone with
// a ban (see BANS in it).
var (
	redisScript    = withoutBans(redisScriptSource)
	redisBanScript = redisScriptSource
)

// redisScriptSHA and redisBanScriptSHA are the SHA1s of the scripts in
// hex, the names EVALSHA runs.
var (
	redisScriptSHA    = scriptSHA(redisScript)
	redisBanScriptSHA = scriptSHA(redisBanScript)
)

// withoutBans returns the script s without its ban blocks.
func withoutBans(s string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.SplitAfter(s, "\n") {
		switch strings.TrimSpace(line) {
		case "-- ban:begin":
			in = true
			continue
		case "-- ban:end":
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
