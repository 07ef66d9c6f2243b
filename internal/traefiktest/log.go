package traefiktest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
)

// ansi matches the colour codes of the common format on a terminal-less
// output.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// OutputPath returns the file that holds Traefik's standard output and
// error, every start appended.
func (tr *Traefik) OutputPath() string { return filepath.Join(tr.Dir, "traefik.log") }

// LogPath returns the file that holds Traefik's log: its output, or
// Dir/file.log with Options.LogFile.
func (tr *Traefik) LogPath() string {
	if tr.opts.LogFile {
		return filepath.Join(tr.Dir, "file.log")
	}
	return tr.OutputPath()
}

// LogText returns Traefik's log since the last start, without colour
// codes.
func (tr *Traefik) LogText() string { return tr.readLog(tr.sinceFile, tr.opts.LogFile) }

// OutputText returns Traefik's output since the last start, without
// colour codes: its log too unless Options.LogFile.
func (tr *Traefik) OutputText() string { return tr.readLog(tr.since, false) }

func (tr *Traefik) readLog(since int64, file bool) string {
	path := tr.OutputPath()
	if file {
		path = tr.LogPath()
	}
	b, _ := os.ReadFile(path)
	if int64(len(b)) < since {
		return ""
	}
	return ansi.ReplaceAllString(string(b[since:]), "")
}

// LogLines returns the lines of the log since the last start that match
// re.
func (tr *Traefik) LogLines(re string) []string {
	rx := regexp.MustCompile(re)
	var out []string
	for _, line := range strings.Split(tr.LogText(), "\n") {
		if rx.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

// Logged reports whether a line of the log since the last start matches
// re within timeout: a line Traefik writes as it answers may reach the
// file just after the answer.
func (tr *Traefik) Logged(re string, timeout time.Duration) bool {
	return e2etest.Until(timeout, "a log line matching "+re, func() (bool, string) {
		return len(tr.LogLines(re)) > 0, ""
	}) == nil
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}
