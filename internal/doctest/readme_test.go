package doctest

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeShowsEachWayIn checks that README.md shows, on the page, the
// three things a user copies: the xcaddy build line, a rate_limit block
// of a Caddyfile, and Traefik's static configuration enabling the plugin
// (local and from the catalog) with a dynamic plugin: windowlimit:
// middleware; and that it stays at most 300 lines. The blocks themselves
// run in caddymodule's and scripts/yaegitest's TestDocExamples.
func TestReadmeShowsEachWayIn(t *testing.T) {
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > 300 {
		t.Errorf("README.md has %d lines, want at most 300", n)
	}
	var readme []Block
	for _, lang := range Languages {
		for _, b := range Blocks(t, "../..", lang) {
			if b.File == "README.md" {
				readme = append(readme, b)
			}
		}
	}
	shows := func(lang, kind string, parts ...string) bool {
		for _, b := range readme {
			if b.Lang != lang || b.Kind != kind {
				continue
			}
			all := true
			for _, p := range parts {
				all = all && strings.Contains(b.Text, p)
			}
			if all {
				return true
			}
		}
		return false
	}
	for _, want := range []struct {
		what, lang, kind string
		parts            []string
	}{
		{"the xcaddy build line", "sh", "", []string{"xcaddy build --with github.com/windowlimit/windowlimit/caddymodule"}},
		{"a rate_limit block", "caddyfile", "site", []string{"rate_limit {", "zone ", "window ", "limit "}},
		{"Traefik's experimental.localPlugins", "yaml", "static", []string{"localPlugins:", "moduleName: github.com/windowlimit/windowlimit"}},
		{"Traefik's experimental.plugins", "yaml", "static", []string{"plugins:", "moduleName: github.com/windowlimit/windowlimit", "version: "}},
		{"a dynamic plugin: windowlimit: middleware", "yaml", "", []string{"middlewares:", "plugin:", "windowlimit:"}},
	} {
		if !shows(want.lang, want.kind, want.parts...) {
			t.Errorf("README.md does not show %s (a ```%s %s block with %q)", want.what, want.lang, want.kind, want.parts)
		}
	}
}
