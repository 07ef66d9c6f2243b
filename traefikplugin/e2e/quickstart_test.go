//go:build !race

package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
	"github.com/windowlimit/windowlimit/internal/traefiktest"
)

// readmeLines returns the commands of the first sh block under README's
// "## heading" that names host, each with the "# output" line under it.
func readmeLines(t *testing.T, heading, host string) (cmds, wants []string) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(e2etest.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	in, block := false, false
	var lines []string
	for _, l := range strings.Split(string(text), "\n") {
		switch {
		case l == "## "+heading:
			in = true
		case strings.HasPrefix(l, "## "):
			in = false
		case in && !block && strings.HasPrefix(l, "```sh"):
			block, lines = true, nil
		case in && block && strings.HasPrefix(l, "```"):
			block = false
			if strings.Contains(strings.Join(lines, "\n"), host) {
				for i, l := range lines {
					if strings.HasPrefix(l, "# ") {
						continue
					}
					if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "# ") {
						t.Fatalf("README's %q has no \"# output\" line under it", l)
					}
					cmds, wants = append(cmds, l), append(wants, strings.TrimPrefix(lines[i+1], "# "))
				}
				return cmds, wants
			}
		case in && block:
			lines = append(lines, l)
		}
	}
	t.Fatalf("no sh block naming %s under README's ## %s", host, heading)
	return nil, nil
}

// quickstart is scripts/traefik-quickstart.sh running on free ports.
type quickstart struct {
	cmd           *exec.Cmd
	done          chan struct{}
	port, backend int
	work          string // its work directory
	log           string // the file of its output
}

func (q *quickstart) output() string {
	b, _ := os.ReadFile(q.log)
	return string(b)
}

// startQuickstart runs the script with pathDir first on PATH and waits,
// at most 60 s, until it says it is ready. The script runs in a process
// group of its own: the test's end kills what the script left in it.
func startQuickstart(t *testing.T, pathDir string) *quickstart {
	t.Helper()
	q := &quickstart{port: e2etest.FreePort(t), backend: e2etest.FreePort(t), done: make(chan struct{}),
		log: filepath.Join(t.TempDir(), "quickstart.log")}
	out, err := os.Create(q.log)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	q.cmd = exec.Command(filepath.Join(e2etest.Root(), "scripts", "traefik-quickstart.sh"))
	q.cmd.Env = append(os.Environ(), "PATH="+pathDir+":"+os.Getenv("PATH"),
		"WL_QUICKSTART_PORT="+strconv.Itoa(q.port), "WL_QUICKSTART_BACKEND_PORT="+strconv.Itoa(q.backend))
	q.cmd.Stdout, q.cmd.Stderr = out, out
	q.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := q.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { q.cmd.Wait(); close(q.done) }()
	t.Cleanup(func() {
		// As Ctrl-C first, so that the script removes its work
		// directory; then whatever is left of its group.
		q.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-q.done:
		case <-time.After(20 * time.Second):
		}
		syscall.Kill(-q.cmd.Process.Pid, syscall.SIGKILL)
		<-q.done
	})
	e2etest.WaitFor(t, 60*time.Second, "traefik-quickstart.sh to say it is ready", func() (bool, string) {
		select {
		case <-q.done:
			t.Fatalf("quickstart: the script exited: %v\n%s", q.cmd.ProcessState, q.output())
		default:
		}
		return strings.Contains(q.output(), "traefik-quickstart: ready"), q.output()
	})
	m := regexp.MustCompile(`(?m)^traefik-quickstart: starting Traefik in (\S+) `).FindStringSubmatch(q.output())
	if m == nil {
		t.Fatalf("quickstart: no line names its work directory:\n%s", q.output())
	}
	q.work = m[1]
	if fi, err := os.Stat(filepath.Join(q.work, "plugins-local")); err != nil || !fi.IsDir() {
		t.Fatalf("quickstart: no plugins-local in its work directory %s: %v", q.work, err)
	}
	return q
}

// usingLine returns the script's line that says which Traefik it runs.
func (q *quickstart) usingLine() string {
	m := regexp.MustCompile(`(?m)^traefik-quickstart: using .*$`).FindString(q.output())
	return m
}

// stop stops the script as Ctrl-C does (a background job ignores SIGINT:
// SIGTERM) and checks that it left no process, port or directory behind.
func (q *quickstart) stop(t *testing.T) {
	t.Helper()
	q.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-q.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("quickstart: the script did not stop within 20 s of SIGTERM:\n%s", q.output())
	}
	for _, port := range []int{q.port, q.backend} {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
			c.Close()
			t.Errorf("quickstart: 127.0.0.1:%d still answers after the script stopped", port)
		}
	}
	if _, err := os.Stat(q.work); err == nil {
		t.Errorf("quickstart: the script left %s behind", q.work)
	}
}

// fakeTraefik writes dir/traefik, whose `traefik version` says version
// and which runs real for anything else.
func fakeTraefik(t *testing.T, dir, version, real string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/usr/bin/env bash\nif [[ ${1:-} == version ]]; then printf 'Version:      %s\\nCodename:     x\\n'; exit 0; fi\nexec %q \"$@\"\n", version, real)
	if err := os.WriteFile(filepath.Join(dir, "traefik"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestE2EQuickstart runs README's Traefik quickstart as written:
// scripts/traefik-quickstart.sh on free loopback ports, with a traefik on
// PATH whose version says "dev" (as one built from source does), which it
// must run; README's curl lines against it, each output compared with the
// "# ..." line under it; then the script stopped as Ctrl-C stops it,
// leaving no process, port or directory behind. Started again with a
// traefik on PATH that says 2.11.0, it must run its own build of v3,
// saying why.
func TestE2EQuickstart(t *testing.T) {
	t.Parallel()
	cached := filepath.Join(e2etest.CacheDir(), "traefik-"+traefiktest.Version)
	traefiktest.Binary(t)
	if _, err := os.Stat(cached); err != nil {
		t.Skipf("the quickstart runs the cached %s when PATH has no v3: %v", cached, err)
	}
	cmds, wants := readmeLines(t, "Quickstart: Traefik", "localhost:8081")
	if len(cmds) < 5 {
		t.Fatalf("%d README lines with their output, want 5 or more: %q", len(cmds), cmds)
	}
	dir := t.TempDir()
	dev, v2 := filepath.Join(dir, "dev"), filepath.Join(dir, "v2")
	fakeTraefik(t, dev, "dev", cached)
	fakeTraefik(t, v2, "2.11.0", cached)

	t.Run("a dev traefik on PATH runs README's lines", func(t *testing.T) {
		q := startQuickstart(t, dev)
		want := "traefik-quickstart: using " + filepath.Join(dev, "traefik") + " (on PATH, Traefik built from source: its version says 'dev'"
		if line := q.usingLine(); !strings.HasPrefix(line, want) {
			t.Fatalf("quickstart, a dev traefik on PATH: %q, want it to start %q:\n%s", line, want, q.output())
		}
		addr := "127.0.0.1:" + strconv.Itoa(q.port)
		for i, cmd := range cmds {
			run := strings.ReplaceAll(cmd, "localhost:8081", addr)
			out, _ := exec.Command("bash", "-c", run).CombinedOutput()
			var got []string
			for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
				got = append(got, strings.TrimRight(l, " \t"))
			}
			if g := strings.Join(got, "\n"); g != wants[i] {
				t.Fatalf("README's %q (run as %q) printed %q, README says %q:\n%s", cmd, run, g, wants[i], q.output())
			}
		}
		q.stop(t)
	})
	t.Run("a v2 traefik on PATH does not run", func(t *testing.T) {
		q := startQuickstart(t, v2)
		want := "traefik-quickstart: using Traefik " + traefiktest.Version + ", built here earlier: " + cached +
			" (" + filepath.Join(v2, "traefik") + " is Traefik 2.11.0, and the plugin needs v3)"
		if line := q.usingLine(); line != want {
			t.Fatalf("quickstart, a v2 traefik on PATH: %q, want %q:\n%s", line, want, q.output())
		}
		q.stop(t)
	})
}
