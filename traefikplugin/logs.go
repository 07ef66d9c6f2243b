package traefikplugin

import (
	"fmt"
	"io"
	"log"
)

// The two writers that reach Traefik's log. Traefik gives the interpreter
// its logger as standard output (logged at DEBUG) and standard error
// (logged at ERROR), in Traefik's format (common or JSON) and to its
// log.filePath. yaegi hands that logger to the plugin's os.Stdout and
// os.Stderr only when it is an *os.File, which Traefik's is not: those
// write to the process's own streams, raw, whatever the log settings. What
// does reach the logger is yaegi's fmt.Print (standard output) and its
// log package (standard error). Compiled, both are the process's streams.
var (
	// debugLog receives the lines of Traefik's DEBUG level.
	debugLog io.Writer = printer{}
	// errorLog receives the lines of Traefik's ERROR level: yaegi's log
	// package writes to the interpreter's standard error, and log.Writer
	// returns that stream itself, without the package's timestamp prefix
	// (Traefik adds its own).
	errorLog = log.Writer()
)

// printer writes to the interpreter's standard output through fmt.Print.
// fmt.Print, Printf and Println are the only functions of the standard
// library that yaegi points at that stream. Traefik's logger makes each
// call one log entry, so each line must be written in one call. The lines
// it carries are rate-limited (at most one a second per middleware), so
// fmt costs the request path nothing.
type printer struct{}

func (printer) Write(p []byte) (int, error) {
	return fmt.Print(string(p))
}
