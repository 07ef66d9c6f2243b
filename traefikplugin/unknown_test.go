package traefikplugin

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// Each block's list of options is its fields' mapstructure names, every
// one, and its Unknown field is the decoder's remain: an option added to
// a block without its list would be refused as unknown, or suggested
// wrongly.
func TestOptionListsMatchFields(t *testing.T) {
	for _, tt := range []struct {
		typ   reflect.Type
		known []string
	}{
		{reflect.TypeOf(Config{}), topOptions},
		{reflect.TypeOf(SourceCriterion{}), sourceOptions},
		{reflect.TypeOf(IPStrategy{}), ipStrategyOptions},
		{reflect.TypeOf(RedisConfig{}), redisOptions},
		{reflect.TypeOf(RedisTLS{}), redisTLSOptions},
	} {
		var names []string
		remain := 0
		for i := 0; i < tt.typ.NumField(); i++ {
			tag := tt.typ.Field(i).Tag.Get("mapstructure")
			if tag == ",remain" {
				remain++
				if tt.typ.Field(i).Type != reflect.TypeOf(map[string]any(nil)) || tt.typ.Field(i).Name != "Unknown" {
					t.Errorf("%v: remain field %v", tt.typ, tt.typ.Field(i))
				}
				continue
			}
			names = append(names, tag)
		}
		if remain != 1 {
			t.Errorf("%v: %d remain fields, want 1", tt.typ, remain)
		}
		if !reflect.DeepEqual(names, tt.known) {
			t.Errorf("%v: fields %v, list %v", tt.typ, names, tt.known)
		}
	}
}

// New refuses an option Traefik's decoder left unused, at every level,
// naming its full path and the option it was likely meant to be, and
// builds no handler.
func TestNewRefusesUnknownOptions(t *testing.T) {
	tests := []struct {
		modify func(c *Config)
		want   string
	}{
		{func(c *Config) { c.Unknown = map[string]any{"countStatuss": []any{"401"}} },
			"unknown option countStatuss; did you mean countStatus?"},
		{func(c *Config) { c.Unknown = map[string]any{"windw": "1m"} },
			"unknown option windw; did you mean window?"},
		{func(c *Config) {
			c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{Unknown: map[string]any{"dept": 1}}}
		}, "unknown option sourceCriterion.ipStrategy.dept; did you mean depth?"},
		{func(c *Config) {
			c.SourceCriterion = &SourceCriterion{Unknown: map[string]any{"requestHeader": "X-Key"}}
		}, "unknown option sourceCriterion.requestHeader; did you mean requestHeaderName?"},
		{func(c *Config) { c.Redis = &RedisConfig{Unknown: map[string]any{"endpoint": "redis:6379"}} },
			"unknown option redis.endpoint; did you mean endpoints?"},
		{func(c *Config) {
			c.Redis = &RedisConfig{TLS: &RedisTLS{Unknown: map[string]any{"insecureSkipVerfy": true}}}
		}, "unknown option redis.tls.insecureSkipVerfy; did you mean insecureSkipVerify?"},
		// Nothing near: the block's options are listed.
		{func(c *Config) {
			c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{Unknown: map[string]any{"trusted": "10.0.0.0/8"}}}
		}, "unknown option sourceCriterion.ipStrategy.trusted (known options: depth, excludedIPs, ipv6Subnet)"},
		// Traefik's rateLimit's own names.
		{func(c *Config) { c.Unknown = map[string]any{"average": 100} },
			"unknown option average; did you mean limit? (rateLimit's average per period is limit per window here)"},
		{func(c *Config) { c.Unknown = map[string]any{"burst": 100} },
			"unknown option burst; windowlimit has no burst"},
		// Sorted, every one named.
		{func(c *Config) { c.Unknown = map[string]any{"zz": 1, "dryrn": true, "b": 2} },
			"unknown option b (known options: window, "},
		{func(c *Config) { c.Unknown = map[string]any{"zz": 1, "dryrn": true, "b": 2} },
			"; also unknown: dryrn, zz"},
		// The decoder took one spelling of an option; another is left.
		{func(c *Config) { c.Unknown = map[string]any{"LIMIT": 5} },
			"option LIMIT is given twice, also as limit (Traefik matches option names in any case): keep one"},
		// Before every other check: a misspelled window is also a
		// missing one.
		{func(c *Config) { c.Window = ""; c.Unknown = map[string]any{"windw": "1m"} },
			"unknown option windw; did you mean window?"},
	}
	for _, tt := range tests {
		c := validConfig()
		tt.modify(c)
		h, err := New(context.Background(), http.NotFoundHandler(), c, "typo@file")
		if err == nil || h != nil {
			t.Errorf("want %q: handler %v, error %v", tt.want, h, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), `windowlimit middleware "typo@file": `) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %q, want one containing %q", err, tt.want)
		}
	}
}

// An empty Unknown map, as the decoder may leave it, is no error.
func TestNewAcceptsEmptyUnknown(t *testing.T) {
	c := validConfig()
	c.Unknown = map[string]any{}
	c.SourceCriterion = &SourceCriterion{Unknown: map[string]any{}, IPStrategy: &IPStrategy{Depth: 1, Unknown: map[string]any{}}}
	if _, err := New(context.Background(), http.NotFoundHandler(), c, "empty-unknown@file"); err != nil {
		t.Fatal(err)
	}
	forget("empty-unknown@file")
}

func TestNearestOption(t *testing.T) {
	for _, tt := range []struct{ k, same, near string }{
		{"dept", "", "depth"},
		{"DEPTH", "depth", ""},
		{"ipv6subnets", "", "ipv6Subnet"},
		{"excludedIP", "", "excludedIPs"},
		{"x", "", ""},
		{"trusted", "", ""},
	} {
		same, near := nearestOption(tt.k, ipStrategyOptions)
		if same != tt.same || near != tt.near {
			t.Errorf("nearestOption(%q) = %q, %q; want %q, %q", tt.k, same, near, tt.same, tt.near)
		}
	}
	if d := editDistance("sourcecriteria", "sourcecriterion"); d != 2 {
		t.Errorf("editDistance = %d, want 2", d)
	}
}
