//go:build !race

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// TestE2ELogs checks where the plugin's lines go, on four instances: log
// format common or json, with or without log.filePath, at DEBUG or INFO.
// The lines must be Traefik's log entries, at their level (the rejection
// at DEBUG, the source that found nothing at ERROR), in its format, in its
// log file when it has one, and nowhere else: not on the process's output
// beside the file, and the DEBUG line not at INFO.
func TestE2ELogs(t *testing.T) {
	t.Parallel()
	be := e2etest.StartBackend(t)
	const (
		rej = `windowlimit: info: middleware "rej-limit@file" rejected a request; 0 more rejections since the last line`
		fb  = `windowlimit: warning: middleware "fb-limit@file": sourceCriterion.ipStrategy.depth 1 found no client address`
	)
	for _, c := range []struct {
		format string
		file   bool
		level  string
	}{
		{"common", false, "INFO"},
		{"common", true, "DEBUG"},
		{"json", false, "DEBUG"},
		{"json", true, "INFO"},
	} {
		where := "no log.filePath"
		if c.file {
			where = "log.filePath"
		}
		t.Run(fmt.Sprintf("format %s, %s, level %s", c.format, where, c.level), func(t *testing.T) {
			t.Parallel()
			tr := start(t, traefiktest.Options{LogFormat: c.format, LogFile: c.file, LogLevel: c.level},
				"fixtures/logs/dynamic.yml", map[string]any{"Backend": be.URL()})
			var codes []string
			for range 2 {
				_, resp := e2etest.Get(t, tr.URL("/rej/"))
				codes = append(codes, fmt.Sprint(resp.Status))
			}
			if strings.Join(codes, " ") != "200 429" {
				t.Fatalf("2 x GET /rej/ (limit 1): %s, want 200 429", strings.Join(codes, " "))
			}
			if req, resp := e2etest.Get(t, tr.URL("/fb/")); resp.Status != 200 {
				t.Fatalf("%v: %v, want 200", req, resp)
			}
			tr.Logged("found no client address", 5*time.Second)
			tr.Stop(syscall.SIGTERM)

			// entry reports whether the log has line, as Traefik's entry
			// at the level: in JSON the message, quotes escaped.
			log := tr.LogText()
			entry := func(prefix *regexp.Regexp, line string) bool {
				if c.format == "json" {
					line = strings.ReplaceAll(line, `"`, `\"`)
				}
				for _, l := range strings.Split(log, "\n") {
					if strings.Contains(l, line) && prefix.MatchString(l) {
						return true
					}
				}
				return false
			}
			var errEntry, dbgEntry, anyEntry *regexp.Regexp
			if c.format == "json" {
				errEntry = regexp.MustCompile(`^\{"plugin":"plugin-windowlimit",.*,"level":"error","message":"`)
				dbgEntry = regexp.MustCompile(`^\{"plugin":"plugin-windowlimit",.*,"level":"debug","message":"`)
				anyEntry = regexp.MustCompile(`^\{.*\}$`)
			} else {
				errEntry = regexp.MustCompile(`^[0-9TZ:+-]* ERR .*plugin=plugin-windowlimit`)
				dbgEntry = regexp.MustCompile(`^[0-9TZ:+-]* DBG .*plugin=plugin-windowlimit`)
				anyEntry = regexp.MustCompile(`^[0-9TZ:+-]+ (DBG|ERR) `)
			}
			if !entry(errEntry, fb) {
				t.Errorf("no entry matching %s with the line %q in %s: %q", errEntry, fb, tr.LogPath(), tr.LogLines("windowlimit:"))
			}
			if c.level == "DEBUG" && !entry(dbgEntry, rej) {
				t.Errorf("no entry matching %s with the line %q in %s: %q", dbgEntry, rej, tr.LogPath(), tr.LogLines("windowlimit:"))
			}
			for _, l := range tr.LogLines("windowlimit: ") {
				if !anyEntry.MatchString(l) {
					t.Errorf("a plugin line that is no Traefik entry (%s) in %s: %q", anyEntry, tr.LogPath(), l)
				}
			}
			if c.level == "INFO" {
				if lines := tr.LogLines("rejected a request"); len(lines) > 0 {
					t.Errorf("the rejection line (DEBUG) is in the log at INFO: %q", lines)
				}
			}
			if c.file && strings.Contains(tr.OutputText(), "windowlimit") {
				t.Errorf("plugin lines on Traefik's output beside its log file:\n%s", tr.OutputText())
			}
		})
	}
}
