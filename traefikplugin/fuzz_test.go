package traefikplugin

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// FuzzNew: any configuration, given as Traefik hands it over from labels
// or YAML (every value a string, blocks as maps, all in Config.Options),
// makes New return a handler, and build a middleware or an error that
// names the bad option; never a panic.
//
// The input is lines of path=value, such as "window=1m" or
// "sourceCriterion.ipStrategy.excludedIPs=10.0.0.0/8,::1"; a path that
// names a block ("redis=") creates it empty. The seeds are in
// testdata/fuzz/FuzzNew/.
func FuzzNew(f *testing.F) {
	f.Add("window=1m\nlimit=20")
	f.Add("window=1m\nlimit=20\nsourceCriterion.ipStrategy.dept=1")
	f.Add("window=1m\nlimit=20\nredis.tls.ca2=x\ncountStatuss=401")
	f.Add("window=1m\nlimit=010\nmaxKeys=1e12")
	f.Fuzz(func(t *testing.T, in string) {
		c := decodeLabels(in)
		d, err := c.decoded()
		if err == nil && (d.Redis != nil || d.Persist != nil) {
			// Check the Redis settings without building the client: the
			// fuzzer must reach no server, least of all localhost:6379;
			// nor write snapshots into a directory it made up.
			if _, err := d.validate(); err != nil {
				checkNamesField(t, err)
			}
			return
		}
		if err != nil {
			checkNamesField(t, err)
		}
		h, err := New(context.Background(), http.NotFoundHandler(), c, "fuzz@file")
		if err != nil || h == nil {
			t.Fatalf("New returned %v, %v: it must always return a handler", h, err)
		}
		if _, err := build(http.NotFoundHandler(), c, "fuzz@file"); err != nil {
			checkNamesField(t, err)
			if _, ok := h.(*misconfigured); !ok {
				t.Fatalf("build failed with %v, but New returned %T", err, h)
			}
		}
	})
}

// checkNamesField fails unless err is "<option>: <message>" for an option
// of the configuration, or "unknown option <path>".
func checkNamesField(t *testing.T, err error) {
	t.Helper()
	if rest, unknown := strings.CutPrefix(err.Error(), "unknown option "); unknown && rest != "" {
		return // its words are unknown_test.go's
	}
	field, _, ok := strings.Cut(err.Error(), ": ")
	if i := strings.IndexByte(field, '['); i > 0 && strings.HasSuffix(field, "]") {
		if _, perr := strconv.Atoi(field[i+1 : len(field)-1]); perr == nil {
			field = field[:i] // excludedIPs[1], endpoints[0]
		}
	}
	if !ok || !knownPath(field) && field != "config" && field != "next" && field != "middleware name" {
		t.Fatalf("error %q does not name an option", err)
	}
}

// knownPath reports whether path names an option, in any case.
func knownPath(path string) bool {
	blocks := map[string][]string{
		"": topOptions, "sourceCriterion.": sourceOptions, "sourceCriterion.ipStrategy.": ipStrategyOptions,
		"redis.": redisOptions, "redis.tls.": redisTLSOptions, "persist.": persistOptions,
	}
	for prefix, known := range blocks {
		if rest, ok := strings.CutPrefix(path, prefix); ok && knownName(rest, known) != "" {
			return true
		}
	}
	return false
}

// decodeLabels builds the Config Traefik hands over for lines of
// path=value: every option in Options, blocks as maps, values as strings.
func decodeLabels(in string) *Config {
	c := CreateConfig()
	c.Options = make(map[string]any)
	for _, line := range strings.Split(in, "\n") {
		path, v, ok := strings.Cut(line, "=")
		if !ok || path == "" {
			continue
		}
		names := strings.Split(path, ".")
		block := c.Options
		for _, n := range names[:len(names)-1] {
			sub, ok := block[n].(map[string]any)
			if !ok {
				sub = make(map[string]any)
				block[n] = sub
			}
			block = sub
		}
		last := names[len(names)-1]
		switch {
		case v == "" && (last == "redis" || last == "tls" || last == "sourceCriterion" || last == "ipStrategy" || last == "persist"):
			block[last] = map[string]any{}
		case strings.HasSuffix(path, "redis.tls.ca") || strings.HasSuffix(path, "redis.tls.key"):
			// The fuzzer must not read files (a path like /dev/zero never
			// ends).
		default:
			block[last] = v
		}
	}
	return c
}
