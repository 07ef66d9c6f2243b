package caddymodule

import (
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestFullZoneSeen: an operator sees a full zone in the metrics
// (caddy_http_rate_limit_evictions_total) and in the log, and the client at
// its limit stays limited through the evictions.
func TestFullZoneSeen(t *testing.T) {
	h, ctx := newHandler(t, `{"max_keys":2,"rate_limits":{"full":{"window":"1h","limit":2}}}`)
	if got := statuses(t, h, 3, "203.0.113.1", "/"); !slices.Equal(got, []int{200, 200, 429}) {
		t.Fatalf("the limited client: %v", got)
	}
	for _, ip := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4"} {
		statuses(t, h, 1, ip, "/")
	}
	if got := statuses(t, h, 1, "203.0.113.1", "/"); got[0] != 429 {
		t.Fatalf("the limited client after the evictions: %v, want 429", got)
	}
	var evictions float64 = -1
	families, err := ctx.GetMetricsRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "caddy_http_rate_limit_evictions_total" && labelValue(m.GetLabel(), "zone") == "full" {
				evictions = m.GetCounter().GetValue()
			}
		}
	}
	if evictions < 3 {
		t.Errorf("caddy_http_rate_limit_evictions_total{zone=full} = %v, want at least 3", evictions)
	}
	if got := gaugeValue(t, ctx.GetMetricsRegistry(), "caddy_http_rate_limit_keys", "full"); got != 2 {
		t.Errorf("caddy_http_rate_limit_keys{zone=full} = %v, want 2 (max_keys)", got)
	}

	core, logs := observer.New(zapcore.WarnLevel)
	fullZoneLog(zap.New(core), "full", 2)(3)
	lines := logs.All()
	if len(lines) != 1 || lines[0].ContextMap()["evicted"] != uint64(3) || lines[0].ContextMap()["max_keys"] != int64(2) {
		t.Fatalf("log lines %+v, want one with evicted 3 and max_keys 2", lines)
	}
}
