package yaegitest

import (
	"net/http"
	"strings"
	"testing"
)

// TestPluginUnknownOptions decodes misspelled options as Traefik does,
// from the file provider (typed values) and from labels (every value a
// string), into the interpreted plugin: Config's remain tag must survive
// yaegi's own struct types, and New must refuse each key, naming its
// path and the option it was likely meant to be, with a middleware that
// answers 500 (never an error, which would disable the router). Spellings
// in another case are accepted.
func TestPluginUnknownOptions(t *testing.T) {
	b, _ := loadPlugin(t)
	base := func(more map[string]any) map[string]any {
		m := map[string]any{"window": "1m", "limit": "5"}
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	ip := func(v map[string]any) map[string]any {
		return base(map[string]any{"sourceCriterion": map[string]any{"ipStrategy": v}})
	}
	tests := []struct {
		name   string
		config map[string]any
		want   string
	}{
		{"top file", base(map[string]any{"countStatuss": []any{"401"}}), "unknown option countStatuss; did you mean countStatus?"},
		{"top label", base(map[string]any{"countStatuss": "401"}), "unknown option countStatuss; did you mean countStatus?"},
		{"ipStrategy file", ip(map[string]any{"dept": 1}), "unknown option sourceCriterion.ipStrategy.dept; did you mean depth?"},
		{"ipStrategy label", ip(map[string]any{"dept": "1"}), "unknown option sourceCriterion.ipStrategy.dept; did you mean depth?"},
		{"sourceCriterion label", base(map[string]any{"sourcecriterion": map[string]any{"requestheader": "X-Key"}}),
			"unknown option sourceCriterion.requestheader; did you mean requestHeaderName?"},
		{"redis label", base(map[string]any{"redis": map[string]any{"endpoint": "127.0.0.1:1"}}),
			"unknown option redis.endpoint; did you mean endpoints?"},
		{"redis.tls label", base(map[string]any{"redis": map[string]any{"tls": map[string]any{"insecureskipverfy": "true"}}}),
			"unknown option redis.tls.insecureskipverfy; did you mean insecureSkipVerify?"},
		{"two spellings", base(map[string]any{"Limit": "50"}),
			"limit: given twice, also as Limit"},
		{"not a number", base(map[string]any{"maxKeys": "lots"}), `maxKeys: must be a whole number in decimal, got "lots"`},
		{"not a block", base(map[string]any{"redis": "127.0.0.1:6379"}), `redis: must be a block of options, got "127.0.0.1:6379"`},
	}
	for _, tt := range tests {
		cfg, err := b.createConfig(tt.config)
		if err != nil {
			t.Errorf("%s: Traefik's decoder refused %v: %v", tt.name, tt.config, err)
			continue
		}
		h, err := b.newChecked(backend, cfg, "typo@file")
		if err == nil || h != nil {
			t.Errorf("%s: %v accepted", tt.name, tt.config)
			continue
		}
		if !strings.Contains(err.Error(), `windowlimit: error: middleware "typo@file" is misconfigured: `+tt.want) {
			t.Errorf("%s: error %q, want %q", tt.name, err, tt.want)
		}
	}

	// Every known option in another case, at every level, as labels may
	// spell them: accepted, and in force.
	cfg, err := b.createConfig(map[string]any{
		"WINDOW": "1m", "limit": "2", "MESSAGE": "slow",
		"SourceCriterion": map[string]any{"IPSTRATEGY": map[string]any{"DEPTH": "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := b.newChecked(backend, cfg, "cases@file")
	if err != nil {
		t.Fatalf("options in other cases refused: %v", err)
	}
	// Depth 1: two clients behind one proxy have counts of their own.
	for _, xff := range []string{"198.51.100.1", "198.51.100.2"} {
		for i := 0; i < 2; i++ {
			if w := get(h, "10.0.0.1:1", xff); w.Code != http.StatusOK {
				t.Fatalf("client %s, request %d: %d", xff, i+1, w.Code)
			}
		}
		if w := get(h, "10.0.0.1:1", xff); w.Code != http.StatusTooManyRequests || w.Body.String() != "slow" {
			t.Fatalf("client %s past its limit: %d %q", xff, w.Code, w.Body)
		}
	}
}
