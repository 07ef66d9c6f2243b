package yaegitest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mitchellh/mapstructure"
	"github.com/traefik/yaegi/interp"
	"gopkg.in/yaml.v3"

	"github.com/windowlimit/windowlimit/internal/headertest"
)

// manifest is the part of .traefik.yml that Traefik v3.6 reads for a yaegi
// middleware (pkg/plugins/types.go).
type manifest struct {
	DisplayName string         `yaml:"displayName"`
	Type        string         `yaml:"type"`
	Runtime     string         `yaml:"runtime"`
	Import      string         `yaml:"import"`
	BasePkg     string         `yaml:"basePkg"`
	Summary     string         `yaml:"summary"`
	UseUnsafe   bool           `yaml:"useUnsafe"`
	TestData    map[string]any `yaml:"testData"`
}

// pluginBuilder holds New and CreateConfig of the interpreted plugin, as
// Traefik's yaegiMiddlewareBuilder does.
type pluginBuilder struct {
	fnNew, fnCreateConfig reflect.Value
	// errLog holds what the plugin wrote to the interpreter's standard
	// error, Traefik's ERROR level, as well as the stream of the options.
	errLog *logWriter
}

// readManifest reads .traefik.yml from the checkout and checks it as
// Traefik's checkLocalPluginManifest does.
func readManifest(tb testing.TB) manifest {
	tb.Helper()
	f, err := os.Open(filepath.Join("..", "..", ".traefik.yml"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var m manifest
	if err := yaml.NewDecoder(f).Decode(&m); err != nil {
		tb.Fatalf("decode .traefik.yml: %v", err)
	}
	if m.Type != "middleware" || m.Runtime != "" && m.Runtime != "yaegi" || m.UseUnsafe {
		tb.Fatalf(".traefik.yml: type %q, runtime %q, useUnsafe %v", m.Type, m.Runtime, m.UseUnsafe)
	}
	if !strings.HasPrefix(m.Import, modulePath) || m.DisplayName == "" || m.Summary == "" || m.TestData == nil {
		tb.Fatalf(".traefik.yml is incomplete: %+v", m)
	}
	return m
}

// loadPlugin imports the plugin into a new interpreter and evaluates New
// and CreateConfig, as Traefik's newInterpreter and
// newYaegiMiddlewareBuilder do.
func loadPlugin(tb testing.TB) (pluginBuilder, manifest) {
	tb.Helper()
	return loadPluginWith(tb, interp.Options{})
}

// loadPluginWith is loadPlugin in an interpreter with the standard streams
// of opt.
func loadPluginWith(tb testing.TB, opt interp.Options) (pluginBuilder, manifest) {
	tb.Helper()
	m := readManifest(tb)
	errLog := &logWriter{}
	if opt.Stderr != nil {
		opt.Stderr = io.MultiWriter(errLog, opt.Stderr)
	} else {
		opt.Stderr = io.MultiWriter(errLog, os.Stderr)
	}
	i := newInterpreterWith(tb, opt)
	if _, err := i.Eval(`import "` + m.Import + `"`); err != nil {
		tb.Fatalf("import %s: %v", m.Import, err)
	}
	basePkg := m.BasePkg
	if basePkg == "" {
		basePkg = strings.ReplaceAll(path.Base(m.Import), "-", "_")
	}
	return pluginBuilder{
		fnNew:          evalPlugin(tb, i, basePkg+".New"),
		fnCreateConfig: evalPlugin(tb, i, basePkg+".CreateConfig"),
		errLog:         errLog,
	}, m
}

func evalPlugin(tb testing.TB, i *interp.Interpreter, expr string) reflect.Value {
	tb.Helper()
	v, err := i.Eval(expr)
	if err != nil {
		tb.Fatalf("eval %s: %v", expr, err)
	}
	return v
}

// createConfig calls CreateConfig and decodes config into the result with
// the decoder settings of Traefik's createConfig.
func (b pluginBuilder) createConfig(config map[string]any) (reflect.Value, error) {
	vConfig := b.fnCreateConfig.Call(nil)[0]
	if len(config) == 0 {
		return vConfig, nil
	}
	decoder, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook:       mapstructure.StringToSliceHookFunc(","),
		WeaklyTypedInput: true,
		Result:           vConfig.Interface(),
	})
	if err != nil {
		return reflect.Value{}, err
	}
	if err := decoder.Decode(config); err != nil {
		return reflect.Value{}, err
	}
	return vConfig, nil
}

// newHandler calls New as Traefik's newHandler does.
func (b pluginBuilder) newHandler(next http.Handler, cfg reflect.Value, name string) (http.Handler, error) {
	results := b.fnNew.Call([]reflect.Value{reflect.ValueOf(context.Background()), reflect.ValueOf(next), cfg, reflect.ValueOf(name)})
	if len(results) > 1 && results[1].Interface() != nil {
		return nil, results[1].Interface().(error)
	}
	h, ok := results[0].Interface().(http.Handler)
	if !ok {
		return nil, errNotHandler
	}
	return h, nil
}

// newChecked calls New as newHandler does and returns, for a middleware
// that New built refusing every request (a misconfigured one), the error
// line it logged: the tests of bad values read it from here.
func (b pluginBuilder) newChecked(next http.Handler, cfg reflect.Value, name string) (http.Handler, error) {
	before := b.errLog.len()
	h, err := b.newHandler(next, cfg, name)
	if err != nil {
		return nil, errString("New returned an error, which disables the router: " + err.Error())
	}
	for _, line := range b.errLog.since(before) {
		if !strings.Contains(line, "middleware "+strconv.Quote(name)+" is misconfigured: ") {
			continue
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://example.com/", nil))
		if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "rate limit misconfigured") {
			return nil, errString("logged " + line + " but answered " + strconv.Itoa(w.Code) + " " + w.Body.String())
		}
		return nil, errString(strings.TrimSuffix(line, "\n"))
	}
	return h, nil
}

type errString string

func (e errString) Error() string { return string(e) }

const errNotHandler = errString("New did not return an http.Handler")

// build decodes config and calls New, failing the test on any error.
func (b pluginBuilder) build(tb testing.TB, config map[string]any, name string) http.Handler {
	tb.Helper()
	cfg, err := b.createConfig(config)
	if err != nil {
		tb.Fatalf("decode config: %v", err)
	}
	h, err := b.newChecked(backend, cfg, name)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return h
}

var backend = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
})

func get(h http.Handler, remote, xff string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	r.RemoteAddr = remote
	if xff != "" {
		r.Header.Set("X-Forwarded-For", xff)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// expectLimit sends limit+2 requests and checks limit x 200, then 429s
// with Retry-After and the headers of mode.
func expectLimit(t *testing.T, h http.Handler, limit int, remote, xff string, legacy, ietf bool) {
	t.Helper()
	for i := 1; i <= limit+2; i++ {
		w := get(h, remote, xff)
		want := http.StatusOK
		if i > limit {
			want = http.StatusTooManyRequests
		}
		if w.Code != want {
			t.Fatalf("request %d: status %d, want %d", i, w.Code, want)
		}
		remaining := limit - i
		if remaining < 0 {
			remaining = 0
		}
		if legacy {
			if got := w.Header().Get("X-RateLimit-Limit"); got != strconv.Itoa(limit) {
				t.Errorf("request %d: X-RateLimit-Limit %q", i, got)
			}
			if got := w.Header().Get("X-RateLimit-Remaining"); got != strconv.Itoa(remaining) {
				t.Errorf("request %d: X-RateLimit-Remaining %q, want %d", i, got, remaining)
			}
		}
		if ietf && !strings.Contains(w.Header().Get("RateLimit"), ";r="+strconv.Itoa(remaining)+";t=") {
			t.Errorf("request %d: RateLimit %q", i, w.Header().Get("RateLimit"))
		}
		if want == http.StatusTooManyRequests {
			if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("request %d: Retry-After %q", i, w.Header().Get("Retry-After"))
			}
			// The draft's t ends when Retry-After does.
			if ietf && !strings.HasSuffix(w.Header().Get("RateLimit"), ";t="+w.Header().Get("Retry-After")) {
				t.Errorf("request %d: RateLimit %q with Retry-After %q", i, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
			}
		}
	}
}

// TestPluginTestData loads the plugin as Traefik does and serves requests
// with the testData of .traefik.yml, decoded as Traefik decodes it.
func TestPluginTestData(t *testing.T) {
	b, m := loadPlugin(t)
	h := b.build(t, m.TestData, "testdata@file")
	limit, _ := strconv.Atoi(toString(m.TestData["limit"]))
	// testData uses ipStrategy depth 1: the rightmost X-Forwarded-For entry.
	expectLimit(t, h, limit, "10.0.0.1:1", "198.51.100.1, 203.0.113.9", true, true)
	if w := get(h, "10.0.0.1:1", "203.0.113.9, 203.0.113.10"); w.Code != http.StatusOK {
		t.Errorf("another client: %d", w.Code)
	}
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	}
	return ""
}

// TestPluginLabels decodes settings given as Docker or Kubernetes labels
// give them: every value a string, keys in any case, lists comma-separated.
func TestPluginLabels(t *testing.T) {
	b, _ := loadPlugin(t)
	labels := map[string]any{
		"window":    "60",
		"subwindow": "6s",
		"limit":     "5",
		"algorithm": "strict",
		"cost":      "1",
		"sourceCriterion": map[string]any{
			"ipstrategy": map[string]any{"excludedIPs": "10.0.0.0/8, 192.168.0.0/16", "ipv6Subnet": "64"},
		},
		"headers":    "legacy",
		"maxKeys":    "1000",
		"dryRun":     "false",
		"statusCode": "429",
		"message":    "slow down",
	}
	h := b.build(t, labels, "labels@docker")
	expectLimit(t, h, 5, "10.0.0.1:1", "2001:db8:1:2::1, 192.168.1.1, 10.0.0.2", true, false)
	// Same /64, other address: same count.
	w := get(h, "10.0.0.1:1", "2001:db8:1:2::ffff, 10.0.0.2")
	if w.Code != http.StatusTooManyRequests || w.Body.String() != "slow down" {
		t.Errorf("same IPv6 /64: %d %q", w.Code, w.Body)
	}
}

// TestPluginBadConfig checks that New reports a bad value through the
// interpreter as an error naming the field, and Traefik's decoder rejects
// a value of the wrong kind naming the field.
func TestPluginBadConfig(t *testing.T) {
	b, _ := loadPlugin(t)
	tests := []struct {
		config map[string]any
		field  string
	}{
		{map[string]any{"window": "1 minute", "limit": "5"}, "window"},
		{map[string]any{"window": "1m", "limit": "0"}, "limit"},
		{map[string]any{"window": "1m", "limit": "5", "subWindow": "7s"}, "subWindow"},
		{map[string]any{"window": "1m", "limit": "5", "headers": "fancy"}, "headers"},
		{map[string]any{"window": "1m", "limit": "5", "sourceCriterion": map[string]any{"ipStrategy": map[string]any{"excludedIPs": "10.0.0.0/8,bogus"}}}, "sourceCriterion.ipStrategy.excludedIPs[1]"},
		{map[string]any{"window": "1m", "limit": "five"}, "limit"},
	}
	for _, tt := range tests {
		cfg, err := b.createConfig(tt.config)
		if err == nil {
			_, err = b.newChecked(backend, cfg, "bad@file")
		}
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("config %v: error %v, want one naming %s", tt.config, err, tt.field)
		}
	}
}

// TestPluginReload calls New again on the same interpreter, as a reload of
// the dynamic configuration does: counts survive, and 100 reloads leave no
// goroutine behind.
func TestPluginReload(t *testing.T) {
	b, _ := loadPlugin(t)
	config := func(limit string) map[string]any {
		return map[string]any{"window": "1m", "limit": limit}
	}
	h := b.build(t, config("3"), "api@file")
	for i := 0; i < 2; i++ {
		if get(h, "203.0.113.7:1", "").Code != http.StatusOK {
			t.Fatal("rejected before the limit")
		}
	}
	h = b.build(t, config("3"), "api@file")
	if get(h, "203.0.113.7:1", "").Code != http.StatusOK || get(h, "203.0.113.7:1", "").Code != http.StatusTooManyRequests {
		t.Fatal("the reload did not keep the count")
	}

	before := runtime.NumGoroutine()
	for i := 0; i < 100; i++ {
		h = b.build(t, config(strconv.Itoa(3+i%2)), "api@file")
		get(h, "203.0.113.7:1", "")
	}
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > before && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(5 * time.Millisecond)
	}
	if n > before {
		t.Errorf("goroutines: %d before 100 reloads, %d after", before, n)
	}
}

// BenchmarkPluginInterpreted times ServeHTTP under yaegi: allowed requests
// from 1024 clients (limit 4000 per minute each), the same from 1024 IPv6
// clients (grouped by /64: 1024 networks), the same without rate-limit
// headers, allowed requests of one client under a limit of 60000 (the
// larger table) and a huge one (beyond the tables: values formatted), and
// rejected requests.
func BenchmarkPluginInterpreted(b *testing.B) {
	pb, _ := loadPlugin(b)
	for _, bc := range []struct {
		name, limit, headers string
		clients              int
	}{
		{"allowed", "4000", "legacy", 1024},
		{"allowed-ipv6", "4000", "legacy", 1024},
		{"allowed-headers-none", "4000", "none", 1024},
		{"allowed-limit-60000", "60000", "legacy", 1},
		{"allowed-huge-limit", "1000000000", "legacy", 1},
		{"denied", "1", "legacy", 1},
		{"banned", "1", "legacy", 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			settings := map[string]any{"window": "1m", "limit": bc.limit, "headers": bc.headers}
			denied := bc.name == "denied" || bc.name == "banned"
			if bc.name == "banned" {
				settings["ban"] = "1h" // every request after the first is banned
			}
			h := pb.build(b, settings, "bench-"+bc.name+"@file")
			reqs := make([]*http.Request, bc.clients)
			for i := range reqs {
				reqs[i] = httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
				reqs[i].RemoteAddr = "10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256) + ":4711"
				if strings.HasSuffix(bc.name, "-ipv6") {
					reqs[i].RemoteAddr = "[2001:db8:" + strconv.FormatInt(int64(i), 16) + "::1]:4711"
				}
			}
			w := &okWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(w, reqs[i%len(reqs)])
			}
			b.StopTimer()
			// What the case measures: admissions, or (limit 1) rejections
			// after the first request.
			if denied && w.denied < b.N-1 || !denied && w.denied != 0 {
				b.Fatalf("%s: %d of %d requests denied", bc.name, w.denied, b.N)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/op")
		})
	}
}

type discard struct{ h http.Header }

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(p []byte) (int, error) { return len(p), nil }
func (w *discard) WriteHeader(int)             {}

// TestPluginDryRun lets every request through under yaegi, with the
// headers saying the limit is reached.
func TestPluginDryRun(t *testing.T) {
	b, _ := loadPlugin(t)
	h := b.build(t, map[string]any{"window": "1m", "limit": "2", "dryRun": "true", "headers": "ietf"}, "dry@file")
	for i := 1; i <= 4; i++ {
		w := get(h, "203.0.113.7:1", "")
		if w.Code != http.StatusOK {
			t.Fatalf("request %d: status %d in dry run", i, w.Code)
		}
		if i > 2 && !strings.Contains(w.Header().Get("RateLimit"), ";r=0;") {
			t.Errorf("request %d: RateLimit %q", i, w.Header().Get("RateLimit"))
		}
	}
}

// The dry-run line, written under yaegi to the interpreter's standard
// output (Traefik's log at DEBUG), names the key only with logKey, given as a label.
func TestPluginDryRunLogKey(t *testing.T) {
	for _, logKey := range []string{"false", "true"} {
		stdout := &logWriter{}
		b, _ := loadPluginWith(t, interp.Options{Stdout: stdout})
		name := "dry-logkey-" + logKey + "@docker"
		h := b.build(t, map[string]any{"window": "1m", "limit": "1", "dryRun": "true", "logKey": logKey}, name)
		// One denial: a new middleware writes its first line at once.
		for i := 1; i <= 2; i++ {
			if w := get(h, "203.0.113.7:1", ""); w.Code != http.StatusOK {
				t.Fatalf("logKey %s, request %d: status %d in dry run", logKey, i, w.Code)
			}
		}
		got := stdout.text(t)
		want := `windowlimit: info: dry run: middleware "` + name + `" would reject a request` + "\n"
		if logKey == "true" {
			want = `windowlimit: info: dry run: middleware "` + name + `" would reject key "203.0.113.7"` + "\n"
		}
		if string(got) != want {
			t.Errorf("logKey %s: standard output %q, want %q", logKey, got, want)
		}
	}
}

// What a handler does to one response's headers, in place, never shows in
// another response, interpreted as compiled (legacy headers written
// inline, and both through decidedModeHeaders).
func TestPluginHeadersAreNotShared(t *testing.T) {
	b, _ := loadPlugin(t)
	scribbler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headertest.Scribble(w.Header())
		w.WriteHeader(http.StatusOK)
	})
	for _, headers := range []string{"legacy", "both"} {
		name := "scribble-" + headers + "@file"
		cfg, err := b.createConfig(map[string]any{"window": "1m", "limit": "1", "headers": headers})
		if err != nil {
			t.Fatal(err)
		}
		h, err := b.newChecked(scribbler, cfg, name)
		if err != nil {
			t.Fatal(err)
		}
		get(h, "203.0.113.1:1", "")
		headertest.Scribble(get(h, "203.0.113.1:1", "").Header())
		plain := b.build(t, map[string]any{"window": "1m", "limit": "1", "headers": headers}, name)
		for _, w := range []*httptest.ResponseRecorder{get(plain, "203.0.113.2:1", ""), get(plain, "203.0.113.2:1", "")} {
			if len(w.Header()) < 3 {
				t.Errorf("%s: status %d, only headers %v", headers, w.Code, w.Header())
			}
			if bad := headertest.Scribbled(w.Header()); len(bad) > 0 {
				t.Errorf("%s: status %d: %v changed by another response: %v", headers, w.Code, bad, w.Header())
			}
		}
	}
}
