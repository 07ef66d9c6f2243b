package traefiktest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/windowlimit/windowlimit/internal/e2etest"
)

// StartTimeout bounds a start (the ping, then the ready path), a stop and
// the waits of Start.
const StartTimeout = 30 * time.Second

// Options are the instance's static configuration beyond its entry points,
// the file provider and the local plugin.
type Options struct {
	// LogLevel is log.level: DEBUG, INFO (when empty), ERROR.
	LogLevel string
	// LogFormat is log.format: common (when empty) or json.
	LogFormat string
	// LogFile, when set, sends Traefik's log to Dir/file.log
	// (log.filePath) instead of its output.
	LogFile bool
	// TrustLoopback keeps the X-Forwarded-For of loopback clients on the
	// web entry point (forwardedHeaders.trustedIPs 127.0.0.1/32), as
	// behind a load balancer.
	TrustLoopback bool
	// API serves Traefik's API (api.insecure) on an entry point of its
	// own, on the port in the instance's API field.
	API bool
	// Static is more top-level static configuration (YAML), appended to
	// traefik.yml as written.
	Static string
}

// Traefik is one Traefik process with the plugin, in a directory of its
// own: traefik.yml, dynamic.yml (watched), plugins-local and its output,
// traefik.log.
type Traefik struct {
	tb   testing.TB
	Web  int    // the web entry point's port
	Ping int    // the ping entry point's port
	API  int    // the API's port, with Options.API
	Dir  string // the working directory
	opts Options
	// since is where the current start's output and log file begin.
	since, sinceFile int64
	cmd              *exec.Cmd
	done             chan struct{}
}

// New lays out an instance with free loopback ports and the plugin from
// this checkout, and stops it when the test ends (printing its log when
// the test failed). Nothing runs until Start; Render writes the dynamic
// configuration first.
func New(tb testing.TB, opts Options) *Traefik {
	tb.Helper()
	Binary(tb)
	tr := &Traefik{tb: tb, Web: e2etest.FreePort(tb), Ping: e2etest.FreePort(tb), Dir: tb.TempDir(), opts: opts}
	if opts.API {
		tr.API = e2etest.FreePort(tb)
	}
	LayOutPlugin(tb, tr.Dir)
	if err := os.WriteFile(filepath.Join(tr.Dir, "traefik.yml"), []byte(tr.static()), 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tr.cmd != nil {
			tr.Stop(syscall.SIGKILL)
		}
		if tb.Failed() {
			tb.Logf("traefik on 127.0.0.1:%d, every start (%s):\n%s", tr.Web, tr.LogPath(), tail(tr.readLog(0, tr.opts.LogFile), 20000))
		}
	})
	return tr
}

// static returns traefik.yml.
func (tr *Traefik) static() string {
	var b strings.Builder
	b.WriteString("global:\n  checkNewVersion: false\n  sendAnonymousUsage: false\n")
	level := tr.opts.LogLevel
	if level == "" {
		level = "INFO"
	}
	b.WriteString("log:\n  level: " + level + "\n")
	if tr.opts.LogFormat != "" {
		b.WriteString("  format: " + tr.opts.LogFormat + "\n")
	}
	if tr.opts.LogFile {
		b.WriteString("  filePath: " + filepath.Join(tr.Dir, "file.log") + "\n")
	}
	b.WriteString("entryPoints:\n")
	b.WriteString("  web:\n    address: \"127.0.0.1:" + strconv.Itoa(tr.Web) + "\"\n")
	if tr.opts.TrustLoopback {
		b.WriteString("    forwardedHeaders:\n      trustedIPs: [\"127.0.0.1/32\"]\n")
	}
	b.WriteString("  ping:\n    address: \"127.0.0.1:" + strconv.Itoa(tr.Ping) + "\"\n")
	if tr.opts.API {
		b.WriteString("  traefik:\n    address: \"127.0.0.1:" + strconv.Itoa(tr.API) + "\"\n")
		b.WriteString("api:\n  insecure: true\n")
	}
	b.WriteString("ping:\n  entryPoint: ping\n")
	b.WriteString("providers:\n  file:\n    filename: " + filepath.Join(tr.Dir, "dynamic.yml") + "\n    watch: true\n")
	b.WriteString("experimental:\n  localPlugins:\n    windowlimit:\n      moduleName: " + Module + "\n")
	if tr.opts.Static != "" {
		b.WriteString(strings.TrimSuffix(tr.opts.Static, "\n") + "\n")
	}
	return b.String()
}

// Render writes the dynamic configuration from fixture, a text/template
// file (relative to the test's package), executed over data; a key that
// data lacks is an error. It writes atomically: once Traefik runs, a
// Render is a reload (wait for it with e2etest.GetRequest).
func (tr *Traefik) Render(fixture string, data any) {
	tr.tb.Helper()
	text, err := os.ReadFile(fixture)
	if err != nil {
		tr.tb.Fatalf("fixture: %v", err)
	}
	tr.RenderText(filepath.Base(fixture), string(text), data)
}

// RenderText is Render of a template's text, named name in errors.
func (tr *Traefik) RenderText(name, text string, data any) {
	tr.tb.Helper()
	tmpl, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		tr.tb.Fatalf("template %s: %v", name, err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		tr.tb.Fatalf("template %s: %v", name, err)
	}
	path := filepath.Join(tr.Dir, "dynamic.yml")
	if err := os.WriteFile(path+".tmp", b.Bytes(), 0o644); err != nil {
		tr.tb.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		tr.tb.Fatal(err)
	}
}

// Start runs Traefik and waits until its ping answers, then, when ready
// is a path, until ready answers 200 on the web entry point: routers and
// middlewares load together, so a router without a limit tells that the
// limited ones are there, at no cost to their counts.
func (tr *Traefik) Start(ready string) {
	tr.tb.Helper()
	if tr.cmd != nil {
		tr.tb.Fatal("traefik: Start while it runs")
	}
	out, err := os.OpenFile(tr.OutputPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tr.tb.Fatal(err)
	}
	defer out.Close()
	tr.since, tr.sinceFile = size(tr.OutputPath()), size(tr.LogPath())
	cmd := exec.Command(Binary(tr.tb), "--configFile="+filepath.Join(tr.Dir, "traefik.yml"))
	cmd.Dir = tr.Dir
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		tr.tb.Fatalf("traefik: %v", err)
	}
	tr.cmd, tr.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(tr.done)
	exited := func() bool {
		select {
		case <-tr.done:
			return true
		default:
			return false
		}
	}
	ping := e2etest.Request{URL: "http://127.0.0.1:" + strconv.Itoa(tr.Ping) + "/ping", Timeout: time.Second}
	e2etest.WaitFor(tr.tb, StartTimeout, "traefik's ping "+ping.URL, func() (bool, string) {
		if exited() {
			tr.tb.Fatalf("traefik exited at start: %v\n%s", cmd.ProcessState, tr.LogText())
		}
		resp, err := e2etest.Send(ping)
		if err != nil {
			return false, err.Error()
		}
		return resp.Status == 200, resp.String()
	})
	if ready == "" {
		return
	}
	if err := e2etest.GetRequest(tr.URL(ready), StartTimeout, e2etest.StatusIs(200)); err != nil {
		tr.tb.Fatalf("traefik never loaded its routers: %v\n%s", err, tr.LogText())
	}
}

// Stop sends sig (SIGTERM: a graceful stop; SIGKILL: a crash) and waits
// for Traefik to exit.
func (tr *Traefik) Stop(sig syscall.Signal) {
	tr.tb.Helper()
	if tr.cmd == nil {
		return
	}
	tr.cmd.Process.Signal(sig)
	select {
	case <-tr.done:
	case <-time.After(StartTimeout):
		tr.cmd.Process.Kill()
		<-tr.done
		tr.tb.Errorf("traefik did not exit within %v of %v", StartTimeout, sig)
	}
	tr.cmd = nil
}

// URL returns the web entry point's URL of path.
func (tr *Traefik) URL(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(tr.Web) + path
}

// APIURL returns the API's URL of path (Options.API).
func (tr *Traefik) APIURL(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(tr.API) + path
}

// String names the instance in failures.
func (tr *Traefik) String() string { return fmt.Sprintf("traefik 127.0.0.1:%d", tr.Web) }

func size(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
