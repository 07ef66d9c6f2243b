package caddymodule

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/windowlimit/windowlimit/internal/spelltest"
)

// Every field the core can name has a Caddyfile spelling, in lower case
// as every Caddyfile subdirective is.
func TestFieldSpellings(t *testing.T) {
	spelltest.Check(t, spelling, spelltest.Traefik)
	for _, f := range spelltest.Fields {
		if name := spelling.Name(f); strings.ToLower(name) != name {
			t.Errorf("field %v is spelled %q, not in lower case", f, name)
		}
	}
}

// The core's own checks, reached through Provision, speak the Caddyfile's
// spelling.
func TestProvisionSpellsCoreErrors(t *testing.T) {
	tests := []struct{ config, want string }{
		{`{"rate_limits":{"a":{"window":"1m","sub_window":"7s","limit":5}}}`, `zone "a": sub_window: 7s does not divide the window 1m0s`},
		{`{"rate_limits":{"a":{"window":"1m","sub_window":"1s","limit":5,"algorithm":"fixed"}}}`, "sub_window: does not apply to the fixed algorithm"},
		{`{"rate_limits":{"a":{"window":"15ns","limit":5}}}`, "sub_window: required: the window 15ns cannot be split"},
		{`{"rate_limits":{"a":{"window":"1m","limit":5,"cost":6}}}`, "cost: 6 exceeds the limit 5"},
		{`{"rate_limits":{"a":{"window":"1m","limit":5000,"algorithm":"log"}}}`, "limit: 5000 is too large for the log algorithm"},
		{`{"rate_limits":{"a{b}":{"window":"1m","limit":1}},"redis":{}}`, `zone name: "a{b}" must not have braces`},
		{`{"rate_limits":{"a":{"window":"10us","sub_window":"2500ns","limit":1}},"redis":{}}`, "sub_window: 2.5µs must be whole microseconds"},
	}
	for _, tt := range tests {
		h := new(Handler)
		if err := json.Unmarshal([]byte(tt.config), h); err != nil {
			t.Fatalf("%s: %v", tt.config, err)
		}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		err := h.Provision(ctx)
		h.Cleanup()
		cancel()
		if err == nil || !strings.Contains(err.Error(), tt.want) || spelltest.Find(err.Error(), spelltest.Traefik) != "" {
			t.Errorf("%s: error %v, want one containing %q in the Caddyfile's spelling", tt.config, err, tt.want)
		}
	}
}
