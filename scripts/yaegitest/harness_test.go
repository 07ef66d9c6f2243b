package yaegitest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

const modulePath = "github.com/windowlimit/windowlimit"

// newInterpreter returns an interpreter set up as Traefik sets up one for a
// plugin: a GOPATH whose src/<module> is this checkout, and the standard
// library's symbols only.
func newInterpreter(tb testing.TB) *interp.Interpreter {
	tb.Helper()
	return newInterpreterWith(tb, interp.Options{})
}

// newInterpreterWith is newInterpreter with the standard streams of opt.
// Without YAEGI_SPECIAL_STDIO, yaegi hands the interpreted code's
// os.Stdout and os.Stderr only a stream that is an *os.File; Traefik's
// are not (see logWriter).
func newInterpreterWith(tb testing.TB, opt interp.Options) *interp.Interpreter {
	tb.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		tb.Fatal(err)
	}
	goPath := tb.TempDir()
	dir := filepath.Join(goPath, "src", filepath.FromSlash(modulePath))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.Symlink(root, dir); err != nil {
		tb.Fatal(err)
	}
	opt.GoPath, opt.Env = goPath, os.Environ()
	i := interp.New(opt)
	if err := i.Use(stdlib.Symbols); err != nil {
		tb.Fatalf("load stdlib symbols: %v", err)
	}
	return i
}

// evalImport imports pkg (a path inside this module) into i.
func evalImport(tb testing.TB, i *interp.Interpreter, pkg string) {
	tb.Helper()
	if _, err := i.Eval(`import "` + modulePath + "/" + pkg + `"`); err != nil {
		tb.Fatalf("import %s under yaegi: %v", pkg, err)
	}
}

// evalValue evaluates expr in i and returns the result.
func evalValue(tb testing.TB, i *interp.Interpreter, expr string) reflect.Value {
	tb.Helper()
	v, err := i.Eval(expr)
	if err != nil {
		tb.Fatalf("eval %s: %v", expr, err)
	}
	return v
}

// cpuTime returns the CPU time this process has used, user and system.
// Benchmarks report it per operation, which the other processes of a
// shared machine disturb less than wall time.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// logWriter stands for the streams Traefik gives a plugin's interpreter:
// its logger, at DEBUG for standard output and ERROR for standard error.
// Like it, logWriter is no *os.File, so yaegi leaves the plugin's
// os.Stdout and os.Stderr on the process's own streams, and like it, it
// makes each Write one log entry.
type logWriter struct {
	mu      sync.Mutex
	entries []string
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entries = append(w.entries, string(p))
	return len(p), nil
}

// len returns how many entries were written.
func (w *logWriter) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.entries)
}

// since returns the entries written after the first n.
func (w *logWriter) since(n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.entries[n:]...)
}

// text returns what was written, failing the test unless every entry was
// one whole line: Traefik's logger would cut a line written in pieces into
// several entries, and put several lines in one.
func (w *logWriter) text(tb testing.TB) string {
	tb.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.entries {
		if !strings.HasSuffix(e, "\n") || strings.Count(e, "\n") != 1 {
			tb.Errorf("log entry %q is not one line", e)
		}
	}
	return strings.Join(w.entries, "")
}
