package caddymodule

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the Caddyfile adapter's output")

// adapt runs the Caddyfile adapter on the file at path and returns the
// indented JSON.
func adapt(t *testing.T, path string) []byte {
	t.Helper()
	input, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(input, map[string]any{"filename": path})
	if err != nil {
		t.Fatalf("adapting %s: %v", path, err)
	}
	for _, w := range warnings {
		t.Errorf("%s:%d: warning: %s", w.File, w.Line, w.Message)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "\t"); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// TestAdaptGolden adapts every testdata/*.caddyfile and compares the JSON
// with testdata/*.json. Run with -update after a deliberate change.
func TestAdaptGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.caddyfile")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			got := adapt(t, in)
			golden := strings.TrimSuffix(in, ".caddyfile") + ".json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestAdaptGolden -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("adapted JSON differs from %s (run with -update if the change is deliberate):\n%s", golden, got)
			}
		})
	}
}

func TestAdaptOrdersBeforeBasicAuth(t *testing.T) {
	var cfg struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Routes []struct {
						Handle []struct {
							Handler string `json:"handler"`
						} `json:"handle"`
					} `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(adapt(t, "testdata/order.caddyfile"), &cfg); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, srv := range cfg.Apps.HTTP.Servers {
		for _, route := range srv.Routes {
			for _, h := range route.Handle {
				order = append(order, h.Handler)
			}
		}
	}
	if strings.Join(order, " ") != "rate_limit authentication static_response" {
		t.Errorf("handler order %v, want rate_limit before authentication (basic_auth)", order)
	}
}

func TestAdaptExample(t *testing.T) {
	out := adapt(t, "../Caddyfile.example")
	if !bytes.Contains(out, []byte(`"handler": "rate_limit"`)) {
		t.Error("Caddyfile.example has no rate_limit handler")
	}
}
