package caddymodule

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestSweepIntervalTooShort: a sweep interval under 100ms made the sweeper
// a busy loop (1ns: a third to nearly all of a core on an idle zone); it
// is refused when the config loads, from JSON, and from a Caddyfile
// already by the adapter, at its line.
func TestSweepIntervalTooShort(t *testing.T) {
	const want = "sweep_interval 1ns is too short (at least 100ms)"
	expectProvisionError(t, `{"sweep_interval":"1ns","rate_limits":{"a":{"window":"1m","limit":1}}}`, want)
	expectProvisionError(t, `{"sweep_interval":"99ms","rate_limits":{"a":{"window":"1m","limit":1}}}`, "sweep_interval 99ms is too short")

	var h Handler
	input := "rate_limit {\n\tzone a {\n\t\twindow 1m\n\t\tlimit 1\n\t}\n\tsweep_interval 1ns\n}"
	err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
	if err == nil || err.Error() != "sweep_interval: 1ns is too short (at least 100ms), at Testfile:6" {
		t.Fatalf("UnmarshalCaddyfile: %v, want sweep_interval: 1ns is too short (at least 100ms), at Testfile:6", err)
	}

	// The error says it once, for the handler, not once per zone.
	h3 := new(Handler)
	if err := json.Unmarshal([]byte(`{"sweep_interval":"1ns","rate_limits":{"a":{"window":"1m","limit":1}}}`), h3); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	err = h3.Provision(ctx)
	h3.Cleanup()
	cancel()
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want exactly %q", err, want)
	}

	// The shortest interval allowed loads.
	h2, _ := newHandler(t, `{"sweep_interval":"100ms","rate_limits":{"a":{"window":"1m","limit":1}}}`)
	if len(h2.zones) != 1 {
		t.Fatalf("100ms: %d zones provisioned", len(h2.zones))
	}
}
