package traefikplugin

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// Each block's list of options is its fields' names, every one, as the
// configuration spells them (their json names): an option added to a
// block without its list would be refused as unknown, or suggested
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
		{reflect.TypeOf(PersistConfig{}), persistOptions},
	} {
		var names []string
		for i := 0; i < tt.typ.NumField(); i++ {
			f := tt.typ.Field(i)
			if f.Name == "Options" {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			names = append(names, name)
			if tt.typ == reflect.TypeOf(Config{}) && f.Tag.Get("mapstructure") != "-" {
				t.Errorf("Config.%s: Traefik's decoder must not see it (mapstructure:\"-\")", f.Name)
			}
		}
		if !reflect.DeepEqual(names, tt.known) {
			t.Errorf("%v: fields %v, list %v", tt.typ, names, tt.known)
		}
	}
	if tag := reflect.TypeOf(Config{}).Field(reflect.TypeOf(Config{}).NumField() - 1).Tag.Get("mapstructure"); tag != ",remain" {
		t.Errorf("Config's last field is tagged %q, want the decoder's remain", tag)
	}
}

// An option that matches none, at every level, is refused with its full
// path and the option it was likely meant to be.
func TestBuildRefusesUnknownOptions(t *testing.T) {
	tests := []struct {
		options map[string]any
		want    string
	}{
		{map[string]any{"countStatuss": []any{"401"}}, "unknown option countStatuss; did you mean countStatus?"},
		{map[string]any{"windw": "1m"}, "unknown option windw; did you mean window?"},
		{map[string]any{"limt": "10"}, "unknown option limt; did you mean limit?"},
		{map[string]any{"sourceCriterion": map[string]any{"ipStrategy": map[string]any{"dept": "1"}}},
			"unknown option sourceCriterion.ipStrategy.dept; did you mean depth?"},
		{map[string]any{"sourceCriterion": map[string]any{"requestHeader": "X-Key"}},
			"unknown option sourceCriterion.requestHeader; did you mean requestHeaderName?"},
		{map[string]any{"redis": map[string]any{"endpoint": "redis:6379"}},
			"unknown option redis.endpoint; did you mean endpoints?"},
		{map[string]any{"redis": map[string]any{"tls": map[string]any{"insecureSkipVerfy": "true"}}},
			"unknown option redis.tls.insecureSkipVerfy; did you mean insecureSkipVerify?"},
		{map[string]any{"persist": map[string]any{"directory": "/x", "intervall": "1s"}},
			"unknown option persist.intervall; did you mean interval?"},
		// Nothing near: the block's options are listed.
		{map[string]any{"sourceCriterion": map[string]any{"ipStrategy": map[string]any{"trusted": "10.0.0.0/8"}}},
			"unknown option sourceCriterion.ipStrategy.trusted (known options: depth, excludedIPs, ipv6Subnet)"},
		// Traefik's rateLimit's own names.
		{map[string]any{"average": "100"},
			"unknown option average; did you mean limit? (rateLimit's average per period is limit per window here)"},
		{map[string]any{"burst": "100"}, "unknown option burst; windowlimit has no burst"},
		// Sorted, every one named.
		{map[string]any{"zz": 1, "dryrn": true, "b": 2}, "unknown option b (known options: window, "},
		{map[string]any{"zz": 1, "dryrn": true, "b": 2}, "; also unknown: dryrn, zz"},
		// Names match in any case, as in Traefik's decoder; two spellings
		// of one option are refused.
		{map[string]any{"LIMIT": "5", "limit": "6"},
			"limit: given twice, also as LIMIT (Traefik matches option names in any case): keep one"},
		// Before every other check: a misspelled window is also a
		// missing one.
		{map[string]any{"windw": "1m", "limit": "ten"}, "unknown option windw; did you mean window?"},
	}
	for _, tt := range tests {
		c := &Config{Options: tt.options}
		if _, ok := tt.options["windw"]; !ok {
			c.Window = "1m"
			c.Limit = 20
		}
		_, err := build(http.NotFoundHandler(), c, "typo@file")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want one containing %q", tt.options, err, tt.want)
		}
	}
}

// Option names match in any case, and an empty block is no error.
func TestBuildAcceptsAnyCaseAndEmptyBlocks(t *testing.T) {
	c := &Config{Options: map[string]any{"WINDOW": "1m", "Limit": "5", "sourceCriterion": map[string]any{},
		"SOURCECRITERION_": nil}}
	delete(c.Options, "SOURCECRITERION_")
	m, err := build(http.NotFoundHandler(), c, "any-case@file")
	if err != nil {
		t.Fatal(err)
	}
	defer forget("any-case@file")
	if m.ruleLimit != 5 {
		t.Fatalf("limit %d, want 5", m.ruleLimit)
	}
}
