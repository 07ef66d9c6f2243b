package traefikplugin

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/internal/spelltest"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

func validConfig() *Config {
	c := CreateConfig()
	c.Window = "1m"
	c.Limit = 20
	return c
}

func TestNewRejectsBadValues(t *testing.T) {
	tests := []struct {
		field  string
		modify func(c *Config)
	}{
		{"window", func(c *Config) { c.Window = "" }},
		{"window", func(c *Config) { c.Window = "soon" }},
		{"window", func(c *Config) { c.Window = "-1m" }},
		{"window", func(c *Config) { c.Window = "0" }},
		{"window", func(c *Config) { c.Window = "99999999999999999" }},
		{"subWindow", func(c *Config) { c.SubWindow = "7q" }},
		{"subWindow", func(c *Config) { c.SubWindow = "-10s" }},
		{"subWindow", func(c *Config) { c.SubWindow = "7s" }},
		{"subWindow", func(c *Config) { c.SubWindow = "100ms" }}, // 600 sub-windows
		{"subWindow", func(c *Config) { c.SubWindow = "2m" }},
		{"subWindow", func(c *Config) { c.Algorithm = "fixed"; c.SubWindow = "10s" }},
		{"subWindow", func(c *Config) { c.Window = "7ns" }},
		{"limit", func(c *Config) { c.Limit = 0 }},
		{"limit", func(c *Config) { c.Limit = -5 }},
		{"limit", func(c *Config) { c.Algorithm = "log"; c.Limit = 1 << 20 }},
		{"algorithm", func(c *Config) { c.Algorithm = "leaky" }},
		{"cost", func(c *Config) { c.Cost = -1 }},
		{"cost", func(c *Config) { c.Cost = 21 }},
		{"maxKeys", func(c *Config) { c.MaxKeys = -1 }},
		{"maxKeys", func(c *Config) { c.MaxKeys = 1<<24 + 1 }},
		{"maxKeys", func(c *Config) { c.Options = map[string]any{"maxKeys": 1e12} }},
		{"maxKeys", func(c *Config) { c.Options = map[string]any{"maxKeys": "1e12"} }},
		{"limit", func(c *Config) { c.Options = map[string]any{"limit": "0x10"} }},
		{"headers", func(c *Config) { c.Headers = "draft-7" }},
		{"statusCode", func(c *Config) { c.StatusCode = 200 }},
		{"statusCode", func(c *Config) { c.StatusCode = 600 }},
		{"sourceCriterion.ipStrategy.depth", func(c *Config) {
			c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{Depth: -1}}
		}},
		{"sourceCriterion.ipStrategy.ipv6Subnet", func(c *Config) {
			c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{IPv6Subnet: 129}}
		}},
		{"sourceCriterion.ipStrategy.excludedIPs[1]", func(c *Config) {
			c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8", "10.0.0.300"}}}
		}},
		{"sourceCriterion.ipStrategy.excludedIPs", func(c *Config) {
			c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{Depth: 1, ExcludedIPs: []string{"10.0.0.0/8"}}}
		}},
		{"sourceCriterion.requestHeaderName", func(c *Config) {
			c.SourceCriterion = &SourceCriterion{RequestHeaderName: "X Bad"}
		}},
		{"sourceCriterion", func(c *Config) {
			c.SourceCriterion = &SourceCriterion{RequestHeaderName: "X-Key", RequestHost: true}
		}},
		{"sourceCriterion", func(c *Config) {
			c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{}, RequestHost: true}
		}},
	}
	for _, tt := range tests {
		c := validConfig()
		tt.modify(c)
		h, err := newChecked(context.Background(), http.NotFoundHandler(), c, "bad@file")
		if err == nil {
			t.Errorf("%s: config %+v accepted", tt.field, c)
			continue
		}
		if h != nil {
			t.Errorf("%s: handler returned with error %v", tt.field, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.field+":") || !strings.Contains(msg, `"bad@file"`) {
			t.Errorf("%s: error %q does not name the field and the middleware", tt.field, msg)
		}
		if s := spelltest.Find(msg, spelltest.Caddy); s != "" {
			t.Errorf("%s: error %q spells a field as Caddy does: %s", tt.field, msg, s)
		}
	}
}

// Every field the core can name has a spelling of the dynamic
// configuration, in camel case.
func TestFieldSpellings(t *testing.T) {
	spelltest.Check(t, spelling, spelltest.Caddy)
	for _, f := range spelltest.Fields {
		if name := spelling.Name(f); strings.Contains(name, "_") {
			t.Errorf("field %v is spelled %q", f, name)
		}
	}
}

// The core's own checks, reached through New, speak the plugin's
// spelling: the middleware's name for a Redis key, subWindow for the
// sub-window in Redis.
func TestNewSpellsCoreErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *Config)
		want   string
	}{
		{"braces{x}", func(c *Config) { c.Redis = &RedisConfig{} }, `middleware name: "braces{x}" must not have braces`},
		{"nanos", func(c *Config) { c.Window = "10us"; c.SubWindow = "2500ns"; c.Redis = &RedisConfig{} }, "subWindow: 2.5µs must be whole microseconds"},
		{"divide", func(c *Config) { c.SubWindow = "7s" }, "subWindow: 7s does not divide the window 1m0s"},
	}
	for _, tt := range tests {
		c := validConfig()
		tt.modify(c)
		_, err := newChecked(context.Background(), http.NotFoundHandler(), c, tt.name)
		if err == nil || !strings.Contains(err.Error(), tt.want) || spelltest.Find(err.Error(), spelltest.Caddy) != "" {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
		forget(tt.name)
	}
}

func TestNewNilArguments(t *testing.T) {
	if _, err := newChecked(context.Background(), http.NotFoundHandler(), nil, "x"); err == nil {
		t.Error("nil config accepted")
	}
	if _, err := newChecked(context.Background(), nil, validConfig(), "x"); err == nil {
		t.Error("nil next accepted")
	}
}

func TestValidateDefaults(t *testing.T) {
	s, err := validConfig().validate()
	if err != nil {
		t.Fatal(err)
	}
	if s.rule.SubWindow != 6*time.Second || s.rule.Algorithm != ratelimit.Sliding || s.rule.Cost != 1 {
		t.Errorf("rule defaults: %+v", s.rule)
	}
	if s.status != 429 || s.message != "Too Many Requests" || s.maxKeys != 0 || s.source != nil || s.dryRun {
		t.Errorf("defaults: %+v", s)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1m", time.Minute, true},
		{"1m30s", 90 * time.Second, true},
		{"60", time.Minute, true},
		{" 10 ", 10 * time.Second, true},
		{"250ms", 250 * time.Millisecond, true},
		{"1.5", 0, false},
		{"", 0, false},
		{"1 minute", 0, false},
		{"9223372037", 0, false},
	}
	for _, tt := range tests {
		got, err := parseDuration("window", tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v", tt.in, got, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "window: ") {
			t.Errorf("error %q does not name the field", err)
		}
	}
}

// Traefik shares one decoded config between the routers of a middleware:
// New must not change it.
func TestNewLeavesConfigUnchanged(t *testing.T) {
	c := validConfig()
	c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{" 10.0.0.0/8 "}}}
	before := *c
	ip := *c.SourceCriterion.IPStrategy
	if _, err := newChecked(context.Background(), http.NotFoundHandler(), c, "unchanged@file"); err != nil {
		t.Fatal(err)
	}
	if c.Window != before.Window || c.SubWindow != "" || c.Cost != 0 || c.StatusCode != 0 || c.Message != "" ||
		c.SourceCriterion.IPStrategy.ExcludedIPs[0] != ip.ExcludedIPs[0] {
		t.Errorf("config changed: %+v", c)
	}
	forget("unchanged@file")
}
