package caddymodule

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/doctest"
)

// troubleshooting is the page whose commands run against real servers.
const troubleshooting = "docs/troubleshooting.md"

// TestTroubleshootingCommands runs the ```sh caddy blocks of
// docs/troubleshooting.md, in order, against a Caddy in this process
// serving the page's Caddyfile, with its ports (8080, 2019) turned into the
// test's.
func TestTroubleshootingCommands(t *testing.T) {
	var caddyfile string
	var blocks []doctest.Block
	for _, b := range doctest.Blocks(t, "..", "caddyfile") {
		if b.File == troubleshooting && caddyfile == "" {
			caddyfile = b.Text
		}
	}
	for _, b := range doctest.Blocks(t, "..", "sh") {
		if b.File == troubleshooting && b.Kind == "caddy" {
			blocks = append(blocks, b)
		}
	}
	if caddyfile == "" || len(blocks) < 4 {
		t.Fatalf("%s: %d caddyfile bytes and %d sh caddy blocks, want a Caddyfile and at least 4", troubleshooting, len(caddyfile), len(blocks))
	}
	tc := newTester(t)
	port := freePort(t)
	addrs := strings.NewReplacer("localhost:8080", "127.0.0.1:"+strconv.Itoa(port), "localhost:2019", "localhost:"+strconv.Itoa(adminPort))
	config := strings.Replace(addrs.Replace(caddyfile), "{\n", fmt.Sprintf("{\n    http_port %d\n", port), 1)
	config = strings.Replace(config, ":8080 {", fmt.Sprintf(":%d {", port), 1)
	tc.InitServer(config, "caddyfile")
	for _, b := range blocks {
		doctest.RunShell(t, b, addrs)
	}
}
