//go:build !race

package e2e

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/windowlimit/windowlimit/caddymodule"
	"github.com/windowlimit/windowlimit/internal/e2etest"
)

// caddyEnv, set in a child's environment, makes the test binary run as
// Caddy with its arguments instead of running the tests.
const caddyEnv = "WL_E2E_RUN_CADDY"

func TestMain(m *testing.M) {
	if os.Getenv(caddyEnv) == "1" {
		os.Args = append([]string{"caddy"}, os.Args[1:]...)
		caddycmd.Main()
		return
	}
	os.Exit(m.Run())
}

// startTimeout bounds how long a Caddy start, a stop or a poll may take.
const startTimeout = 15 * time.Second

// caddy is one Caddy process run from a templated Caddyfile.
type caddy struct {
	t      *testing.T
	Web    int    // the site's port
	Admin  int    // the admin endpoint's port
	Data   string // XDG_DATA_HOME: where the zones persist
	config string // the Caddyfile's path
	log    string // the log of every start, appended
	since  int64  // where the current start's log begins
	cmd    *exec.Cmd
	done   chan struct{}
}

// newCaddy picks free ports and a data directory for one instance, and
// stops it when the test ends. Nothing runs until start.
func newCaddy(t *testing.T) *caddy {
	t.Helper()
	dir := t.TempDir()
	c := &caddy{
		t:      t,
		Web:    e2etest.FreePort(t),
		Admin:  e2etest.FreePort(t),
		Data:   filepath.Join(dir, "data"),
		config: filepath.Join(dir, "Caddyfile"),
		log:    filepath.Join(dir, "caddy.log"),
	}
	t.Cleanup(func() {
		if c.cmd != nil {
			c.stop(syscall.SIGKILL)
		}
		if t.Failed() {
			b, _ := os.ReadFile(c.log)
			t.Logf("caddy log, every start (%s):\n%s", c.log, b)
		}
	})
	return c
}

// render writes text, a text/template over vars and the instance's own
// Web and Admin ports, as the instance's Caddyfile.
func (c *caddy) render(text string, vars map[string]any) {
	c.t.Helper()
	all := map[string]any{"Web": c.Web, "Admin": c.Admin}
	for k, v := range vars {
		all[k] = v
	}
	tmpl, err := template.New("Caddyfile").Option("missingkey=error").Parse(text)
	if err != nil {
		c.t.Fatalf("Caddyfile template: %v", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, all); err != nil {
		c.t.Fatalf("Caddyfile template: %v", err)
	}
	if err := os.WriteFile(c.config, b.Bytes(), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// start runs `caddy run` on the Caddyfile and waits until its admin
// endpoint answers.
func (c *caddy) start() {
	c.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		c.t.Fatal(err)
	}
	logf, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	if fi, err := logf.Stat(); err == nil {
		c.since = fi.Size()
	}
	cmd := exec.Command(exe, "run", "--config", c.config, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), caddyEnv+"=1",
		"XDG_DATA_HOME="+c.Data, "XDG_CONFIG_HOME="+filepath.Join(filepath.Dir(c.config), "config"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("caddy run: %v", err)
	}
	c.cmd, c.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(c.done)
	url := c.adminURL("/config/")
	site := "127.0.0.1:" + strconv.Itoa(c.Web)
	e2etest.WaitFor(c.t, startTimeout, "caddy's admin endpoint "+url+" and its site "+site+" to answer", func() (bool, string) {
		select {
		case <-c.done:
			c.t.Fatalf("caddy exited at start: %v\n%s", cmd.ProcessState, c.logText())
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		conn, err := net.DialTimeout("tcp", site, time.Second)
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	})
}

// stop sends sig (SIGTERM: a graceful stop; SIGKILL: a crash) and waits
// for Caddy to exit.
func (c *caddy) stop(sig syscall.Signal) {
	c.t.Helper()
	c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(startTimeout):
		c.cmd.Process.Kill()
		<-c.done
		c.t.Errorf("caddy did not exit within %v of %v", startTimeout, sig)
	}
	c.cmd = nil
}

// load loads the rendered Caddyfile through the admin API, as `caddy
// reload` does.
func (c *caddy) load() {
	c.t.Helper()
	body, err := os.ReadFile(c.config)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := http.Post(c.adminURL("/load"), "text/caddyfile", bytes.NewReader(body))
	if err != nil {
		c.t.Fatalf("POST /load: %v", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("POST /load: %d %s", resp.StatusCode, msg)
	}
}

// logText returns what the instance has logged since its last start.
func (c *caddy) logText() string {
	b, _ := os.ReadFile(c.log)
	if int64(len(b)) < c.since {
		return ""
	}
	return string(b[c.since:])
}

// logHas reports whether a line of the log matches re.
func (c *caddy) logHas(re string) bool {
	return regexp.MustCompile("(?m)" + re).MatchString(c.logText())
}

// logged reports whether a line of the log matches re within 2 s: a line
// Caddy writes as it answers may reach the file just after the answer.
func (c *caddy) logged(re string) bool {
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c.logHas(re) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func (c *caddy) url(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(c.Web) + path
}

func (c *caddy) adminURL(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(c.Admin) + path
}

// metric returns the value of the metrics line that starts with name
// (labels included), and whether there is one.
func metric(t *testing.T, c *caddy, name string) (float64, bool) {
	t.Helper()
	_, resp := e2etest.Get(t, c.adminURL("/metrics"))
	for _, line := range strings.Split(resp.Body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// metricLines returns the metrics lines that hold word, for failures.
func metricLines(t *testing.T, c *caddy, word string) string {
	t.Helper()
	_, resp := e2etest.Get(t, c.adminURL("/metrics"))
	var out []string
	for _, line := range strings.Split(resp.Body, "\n") {
		if strings.Contains(line, word) && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
