package caddymodule

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

const spoofableWarning = "client IP is spoofable"

// TestSpoofableClientIPWarning provisions whole configs, as caddy
// validate does, and reads the handler's log: a server that trusts
// proxies without trusted_proxies_strict gets one warning per handler,
// naming the zones whose keys read the client IP.
func TestSpoofableClientIPWarning(t *testing.T) {
	const trusted = "trusted_proxies static private_ranges"
	tests := []struct {
		name, servers, keyA, keyB string
		want                      []string // the zones named; nil for no warning
	}{
		{"trusted, not strict", trusted, "", "{remote_host}", []string{"a"}},
		{"two zones, one line", trusted, "{client_ip}", "{header.X-Api-Key}", []string{"a", "b"}},
		{"strict", trusted + "\n\t\ttrusted_proxies_strict", "", "{client_ip}", nil},
		{"no trusted proxies", "", "", "{client_ip}", nil},
		{"keys that do not read it", trusted, "{remote_host}", "k:{header.X-Api-Key}", nil},
		{"a CIDR override reads it", trusted, "{remote_host}", "k:{header.X-Api-Key}\n\t\t\toverride 10.0.0.0/8 unlimited", []string{"b"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logFile := filepath.Join(t.TempDir(), "log.json")
			zone := func(name, key string) string {
				// Zones of their own, away from other tests' state.
				z := fmt.Sprintf("\t\tzone spoof%d%s {\n", i, name)
				if key != "" {
					z += "\t\t\tkey " + key + "\n"
				}
				return z + "\t\t\twindow 1m\n\t\t\tlimit 5\n\t\t}\n"
			}
			global := fmt.Sprintf("\tlog warnings {\n\t\toutput file %s\n\t\tformat json\n\t\tinclude http.handlers.rate_limit\n\t}\n", logFile)
			if tt.servers != "" {
				global = "\tservers {\n\t\t" + tt.servers + "\n\t}\n" + global
			}
			caddyfile := fmt.Sprintf("{\n%s}\n\n:%d {\n\trate_limit {\n%s%s\t}\n\trespond \"ok\"\n}\n",
				global, freePort(t), zone("a", tt.keyA), zone("b", tt.keyB))
			var want []string
			for _, z := range tt.want {
				want = append(want, fmt.Sprintf("spoof%d%s", i, z))
			}
			adapted, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
			if err != nil || len(warnings) > 0 {
				t.Fatalf("adapting %s: %v %v", caddyfile, err, warnings)
			}
			var cfg caddy.Config
			if err := json.Unmarshal(adapted, &cfg); err != nil {
				t.Fatal(err)
			}
			if err := caddy.Validate(&cfg); err != nil {
				t.Fatalf("validate: %v", err)
			}
			var lines []map[string]any
			if data, err := os.ReadFile(logFile); err == nil {
				for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
					var entry map[string]any
					if json.Unmarshal([]byte(l), &entry) == nil && strings.HasPrefix(fmt.Sprint(entry["msg"]), spoofableWarning) {
						lines = append(lines, entry)
					}
				}
			}
			if want == nil {
				if len(lines) != 0 {
					t.Fatalf("warned: %v", lines)
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("%d warnings, want 1", len(lines))
			}
			var zones []string
			for _, z := range lines[0]["zones"].([]any) {
				zones = append(zones, z.(string))
			}
			if lines[0]["level"] != "warn" || !slices.Equal(zones, want) || !strings.Contains(fmt.Sprint(lines[0]["msg"]), "trusted_proxies_strict") {
				t.Errorf("warning %v, want one at warn naming zones %v and trusted_proxies_strict", lines[0], want)
			}
		})
	}
}

// TestTakesLeftmostClientIP: trusting proxies in any way, but not
// strictly, is the server the warning is about.
func TestTakesLeftmostClientIP(t *testing.T) {
	raw := json.RawMessage(`{"source":"static","ranges":["10.0.0.0/8"]}`)
	for _, tt := range []struct {
		name string
		srv  *caddyhttp.Server
		want bool
	}{
		{"no trusted proxies", &caddyhttp.Server{}, false},
		{"trusted_proxies not loaded yet", &caddyhttp.Server{TrustedProxiesRaw: raw}, true},
		{"trusted_proxies_unix", &caddyhttp.Server{TrustedProxiesUnix: true}, true},
		{"strict", &caddyhttp.Server{TrustedProxiesRaw: raw, TrustedProxiesUnix: true, TrustedProxiesStrict: 1}, false},
	} {
		if got := takesLeftmostClientIP(tt.srv); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
