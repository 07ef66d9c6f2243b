package redisstore

import (
	"crypto/sha1"
	"encoding/hex"
)

//go:generate go test -run ^TestScriptSource$ -update .

// redisScript (script_lua.go) is script.lua, the script that decides,
// refunds and resets; its header is the table of modes, arguments and
// replies. The Go string is generated from the file by go generate,
// because yaegi does not run //go:embed, and TestScriptSource fails when
// the two differ.

// redisScriptSHA is the SHA1 of redisScript in hex, the name EVALSHA runs.
var redisScriptSHA = scriptSHA(redisScript)

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
