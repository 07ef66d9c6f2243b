package yaegitest

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/windowlimit/windowlimit/internal/doctest"
	"github.com/windowlimit/windowlimit/internal/redistest"
)

// TestDocExamples runs every Traefik YAML example of README.md and
// docs/*.md through the interpreted plugin, decoded as Traefik decodes it,
// so the documentation cannot drift from the plugin. The fence's second
// word says what the block is (docs/development.md):
//
//	```yaml          dynamic configuration, file provider or a Kubernetes
//	                 Middleware: every plugin.windowlimit in it goes to New,
//	                 and there must be one
//	```yaml labels   Docker labels: the plugin.windowlimit ones are decoded
//	                 as all-string settings, then New
//	```yaml static   static configuration: it must declare the plugin with
//	                 this module's moduleName
//
// A block whose first line is "# error: <text>" must fail with an error
// that contains <text>. A path under /certs/ (ca.pem, client.pem,
// client-key.pem) is replaced by a certificate the test writes, and a
// path under /data/ (a persist directory) by a temporary directory.
func TestDocExamples(t *testing.T) {
	b, _ := loadPlugin(t)
	certs := redistest.WriteCerts(t)
	files := map[string]string{
		"/certs/ca.pem":         certs.CA,
		"/certs/client.pem":     certs.Cert,
		"/certs/client-key.pem": certs.Key,
	}
	ran := make(map[string]int)
	for _, block := range doctest.Blocks(t, "../..", "yaml") {
		t.Run(fmt.Sprintf("%s:%d", block.File, block.Line), func(t *testing.T) {
			var doc any
			if err := yaml.Unmarshal([]byte(block.Text), &doc); err != nil {
				t.Fatalf("%v: %v", block, err)
			}
			var configs map[string]map[string]any
			switch block.Kind {
			case "static":
				if err := checkStatic(doc); err != nil {
					t.Errorf("%v: %v", block, err)
				}
				ran[block.Kind]++
				return
			case "labels":
				configs = labelConfigs(t, block, doc)
			case "":
				configs = dynamicConfigs(doc)
			default:
				t.Fatalf("%v: unknown kind %q: want none, labels or static", block, block.Kind)
			}
			if len(configs) == 0 {
				t.Fatalf("%v: no plugin.windowlimit settings in the block", block)
			}
			names := make([]string, 0, len(configs))
			for name := range configs {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				config := replaceCerts(t, configs[name], files).(map[string]any)
				cfg, err := b.createConfig(config)
				if err == nil {
					_, err = b.newChecked(backend, cfg, name)
				}
				switch {
				case block.WantErr == "" && err != nil:
					t.Errorf("%v: middleware %s: %v", block, name, err)
				case block.WantErr != "" && err == nil:
					t.Errorf("%v: middleware %s: want an error containing %q, got none", block, name, block.WantErr)
				case block.WantErr != "" && !strings.Contains(err.Error(), block.WantErr):
					t.Errorf("%v: middleware %s: error %q, want one containing %q", block, name, err, block.WantErr)
				}
			}
			ran[block.Kind]++
		})
	}
	t.Logf("doc examples run: %v", ran)
	for _, kind := range []string{"", "labels", "static"} {
		if ran[kind] == 0 {
			t.Errorf("no documentation example of kind %q ran: the extraction is broken", kind)
		}
	}
}

// dynamicConfigs returns the plugin.windowlimit settings of a file
// provider's http.middlewares, named <name>@file, or of a Kubernetes
// Middleware, named <name>@kubernetescrd.
func dynamicConfigs(doc any) map[string]map[string]any {
	configs := make(map[string]map[string]any)
	if spec := lookup(doc, "spec", "plugin", "windowlimit"); spec != nil {
		name, _ := lookup(doc, "metadata", "name").(string)
		configs[name+"@kubernetescrd"] = asMap(spec)
	}
	middlewares, _ := lookup(doc, "http", "middlewares").(map[string]any)
	for name, m := range middlewares {
		if c := lookup(m, "plugin", "windowlimit"); c != nil {
			configs[name+"@file"] = asMap(c)
		}
	}
	return configs
}

// labelConfigs turns Docker labels into the settings Traefik's label
// decoder gives a plugin: a nested map whose leaves are the labels' string
// values, named <name>@docker.
func labelConfigs(t *testing.T, block doctest.Block, doc any) map[string]map[string]any {
	labels, _ := lookup(doc, "labels").([]any)
	if labels == nil {
		t.Fatalf("%v: want a labels: list", block)
	}
	const prefix = "traefik.http.middlewares."
	configs := make(map[string]map[string]any)
	for _, l := range labels {
		label, _ := l.(string)
		key, value, ok := strings.Cut(label, "=")
		if !ok || !strings.HasPrefix(key, "traefik.") {
			t.Fatalf("%v: %q is not a traefik.<path>=<value> label", block, label)
		}
		name, path, ok := strings.Cut(strings.TrimPrefix(key, prefix), ".plugin.windowlimit.")
		if !strings.HasPrefix(key, prefix) || !ok {
			continue // a router's or another middleware's label
		}
		m := configs[name+"@docker"]
		if m == nil {
			m = make(map[string]any)
			configs[name+"@docker"] = m
		}
		parts := strings.Split(path, ".")
		for _, p := range parts[:len(parts)-1] {
			next, _ := m[p].(map[string]any)
			if next == nil {
				next = make(map[string]any)
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = value
	}
	return configs
}

// checkStatic checks that a static configuration declares the plugin,
// from the catalog (with a version) or as a local plugin.
func checkStatic(doc any) error {
	if p := lookup(doc, "experimental", "plugins", "windowlimit"); p != nil {
		if lookup(p, "moduleName") != modulePath || lookup(p, "version") == nil {
			return fmt.Errorf("experimental.plugins.windowlimit: want moduleName %s and a version", modulePath)
		}
		return nil
	}
	if p := lookup(doc, "experimental", "localPlugins", "windowlimit"); p != nil {
		if lookup(p, "moduleName") != modulePath {
			return fmt.Errorf("experimental.localPlugins.windowlimit: want moduleName %s", modulePath)
		}
		return nil
	}
	return fmt.Errorf("no experimental.plugins.windowlimit or experimental.localPlugins.windowlimit")
}

// replaceCerts returns v with every string that names a file under /certs/
// replaced by the test certificate of that name.
func replaceCerts(t *testing.T, v any, files map[string]string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = replaceCerts(t, e, files)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = replaceCerts(t, e, files)
		}
		return out
	case string:
		if strings.HasPrefix(v, "/data/") {
			// A persist directory: the test's own, not the machine's.
			return t.TempDir()
		}
		if strings.HasPrefix(v, "/certs/") {
			f, ok := files[v]
			if !ok {
				t.Fatalf("no test certificate for %s", v)
			}
			return f
		}
	}
	return v
}

// lookup follows keys through nested maps; nil when one is missing.
func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
