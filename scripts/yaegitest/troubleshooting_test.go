package yaegitest

import (
	"net/http/httptest"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/windowlimit/windowlimit/internal/doctest"
)

// TestTroubleshootingCommands runs the ```sh traefik blocks of
// docs/troubleshooting.md, in order, against an HTTP server in front of
// the interpreted plugin configured by the page's YAML block, with
// localhost:8081 turned into the server's address.
func TestTroubleshootingCommands(t *testing.T) {
	const page = "docs/troubleshooting.md"
	var configs map[string]map[string]any
	var blocks []doctest.Block
	for _, b := range doctest.Blocks(t, "../..", "yaml") {
		if b.File == page && configs == nil {
			var doc any
			if err := yaml.Unmarshal([]byte(b.Text), &doc); err != nil {
				t.Fatalf("%v: %v", b, err)
			}
			configs = dynamicConfigs(doc)
		}
	}
	for _, b := range doctest.Blocks(t, "../..", "sh") {
		if b.File == page && b.Kind == "traefik" {
			blocks = append(blocks, b)
		}
	}
	if len(configs) != 1 || len(blocks) == 0 {
		t.Fatalf("%s: %d middlewares and %d sh traefik blocks, want 1 and some", page, len(configs), len(blocks))
	}
	b, _ := loadPlugin(t)
	for name, config := range configs {
		srv := httptest.NewServer(b.build(t, config, name))
		defer srv.Close()
		addrs := strings.NewReplacer("localhost:8081", strings.TrimPrefix(srv.URL, "http://"))
		for _, block := range blocks {
			doctest.RunShell(t, block, addrs)
		}
	}
}
