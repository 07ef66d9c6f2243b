package traefikplugin

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// FuzzNew: any configuration, given as Traefik hands it over from labels
// or YAML (every value a string, decoded weakly), makes New return a
// middleware or an error that names the bad field; never a panic.
//
// The input is lines of path=value, such as "window=1m" or
// "sourceCriterion.ipStrategy.excludedIPs=10.0.0.0/8,::1"; a path that
// names a block ("redis=") creates it empty. The seeds are in
// testdata/fuzz/FuzzNew/.
func FuzzNew(f *testing.F) {
	f.Add("window=1m\nlimit=20")
	f.Add("window=1m\nlimit=20\nsourceCriterion.ipStrategy.dept=1")
	f.Add("window=1m\nlimit=20\nredis.tls.ca2=x\ncountStatuss=401")
	f.Fuzz(func(t *testing.T, in string) {
		c, ok := decodeLabels(in)
		if !ok {
			return // Traefik itself would refuse it
		}
		if c.Redis != nil || c.Persist != nil {
			// Check the Redis settings without building the client: the
			// fuzzer must reach no server, least of all localhost:6379;
			// nor write snapshots into a directory it made up.
			if _, err := c.validate(); err != nil {
				checkNamesField(t, err)
			}
			return
		}
		h, err := New(context.Background(), http.NotFoundHandler(), c, "fuzz@file")
		if err != nil {
			if h != nil {
				t.Fatalf("a handler along with the error %v", err)
			}
			if !strings.Contains(err.Error(), `"fuzz@file"`) {
				t.Fatalf("error %q does not name the middleware", err)
			}
			checkNamesField(t, errors.Unwrap(err))
		} else if h == nil {
			t.Fatal("no handler and no error")
		}
	})
}

// checkNamesField fails unless err is "<field>: <message>" for a field of
// the configuration, or "unknown option <path>".
func checkNamesField(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("an error that wraps nothing")
	}
	if rest, unknown := strings.CutPrefix(err.Error(), "unknown option "); unknown && rest != "" {
		return // its words are unknown_test.go's
	}
	field, _, ok := strings.Cut(err.Error(), ": ")
	if i := strings.IndexByte(field, '['); i > 0 && strings.HasSuffix(field, "]") {
		if _, perr := strconv.Atoi(field[i+1 : len(field)-1]); perr == nil {
			field = field[:i] // excludedIPs[1], endpoints[0]
		}
	}
	if _, known := labelSetters[field]; !ok || !known && field != "config" && field != "next" {
		t.Fatalf("error %q does not name a field", err)
	}
}

// labelSetters decode one value into its field, as Traefik's weakly typed
// decoding does: numbers and booleans may be strings, lists are
// comma-separated. A false result is a value Traefik would refuse.
var labelSetters = map[string]func(c *Config, v string) bool{
	"window":       func(c *Config, v string) bool { c.Window = v; return true },
	"subWindow":    func(c *Config, v string) bool { c.SubWindow = v; return true },
	"limit":        func(c *Config, v string) bool { return setInt64(&c.Limit, v) },
	"algorithm":    func(c *Config, v string) bool { c.Algorithm = v; return true },
	"cost":         func(c *Config, v string) bool { return setInt64(&c.Cost, v) },
	"headers":      func(c *Config, v string) bool { c.Headers = v; return true },
	"maxKeys":      func(c *Config, v string) bool { return setInt(&c.MaxKeys, v) },
	"dryRun":       func(c *Config, v string) bool { return setBool(&c.DryRun, v) },
	"logKey":       func(c *Config, v string) bool { return setBool(&c.LogKey, v) },
	"statusCode":   func(c *Config, v string) bool { return setInt(&c.StatusCode, v) },
	"message":      func(c *Config, v string) bool { c.Message = v; return true },
	"onStoreError": func(c *Config, v string) bool { c.OnStoreError = v; return true },
	"countStatus":  func(c *Config, v string) bool { c.CountStatus = splitList(v); return true },
	"overrides":    func(c *Config, v string) bool { c.Overrides = splitList(v); return true },

	"sourceCriterion":                   func(c *Config, v string) bool { sc(c); return true },
	"sourceCriterion.requestHeaderName": func(c *Config, v string) bool { sc(c).RequestHeaderName = v; return true },
	"sourceCriterion.requestHost":       func(c *Config, v string) bool { return setBool(&sc(c).RequestHost, v) },
	"sourceCriterion.ipStrategy":        func(c *Config, v string) bool { ips(c); return true },
	"sourceCriterion.ipStrategy.depth":  func(c *Config, v string) bool { return setInt(&ips(c).Depth, v) },
	"sourceCriterion.ipStrategy.excludedIPs": func(c *Config, v string) bool {
		ips(c).ExcludedIPs = splitList(v)
		return true
	},
	"sourceCriterion.ipStrategy.ipv6Subnet": func(c *Config, v string) bool { return setInt(&ips(c).IPv6Subnet, v) },

	"redis":                func(c *Config, v string) bool { rc(c); return true },
	"redis.endpoints":      func(c *Config, v string) bool { rc(c).Endpoints = splitList(v); return true },
	"redis.username":       func(c *Config, v string) bool { rc(c).Username = v; return true },
	"redis.password":       func(c *Config, v string) bool { rc(c).Password = v; return true },
	"redis.db":             func(c *Config, v string) bool { return setInt(&rc(c).DB, v) },
	"redis.dialTimeout":    func(c *Config, v string) bool { rc(c).DialTimeout = v; return true },
	"redis.readTimeout":    func(c *Config, v string) bool { rc(c).ReadTimeout = v; return true },
	"redis.writeTimeout":   func(c *Config, v string) bool { rc(c).WriteTimeout = v; return true },
	"redis.poolSize":       func(c *Config, v string) bool { return setInt(&rc(c).PoolSize, v) },
	"redis.maxActiveConns": func(c *Config, v string) bool { return setInt(&rc(c).MaxActiveConns, v) },
	"redis.minIdleConns":   func(c *Config, v string) bool { return setInt(&rc(c).MinIdleConns, v) },
	"redis.keyPrefix":      func(c *Config, v string) bool { rc(c).KeyPrefix = v; return true },
	"redis.tls":            func(c *Config, v string) bool { tlsc(c); return true },
	// No ca or key: the fuzzer must not read files (a path like /dev/zero
	// never ends). A cert without a key is refused before any read.
	"redis.tls.cert":               func(c *Config, v string) bool { tlsc(c).Cert = v; return true },
	"redis.tls.insecureSkipVerify": func(c *Config, v string) bool { return setBool(&tlsc(c).InsecureSkipVerify, v) },
}

// decodeLabels builds a Config from lines of path=value.
func decodeLabels(in string) (*Config, bool) {
	c := CreateConfig()
	for _, line := range strings.Split(in, "\n") {
		path, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		set, known := labelSetters[path]
		if !known {
			addUnknown(c, path, v)
			continue
		}
		if !set(c, v) {
			return nil, false
		}
	}
	return c, true
}

// addUnknown puts the label at path, which names no field, where
// Traefik's decoder leaves it: in the Unknown of the deepest block its
// path names, under the first name that is no option of that block. A
// name that is an option in another case is skipped: Traefik's decoder
// would place it (or, with the option also set, leave it as a second
// spelling, which the unit tests cover).
func addUnknown(c *Config, path, v string) {
	names := strings.Split(path, ".")
	var unknown *map[string]any
	known := topOptions
	switch {
	case len(names) > 2 && names[0] == "sourceCriterion" && names[1] == "ipStrategy":
		unknown, known, names = &ips(c).Unknown, ipStrategyOptions, names[2:]
	case len(names) > 1 && names[0] == "sourceCriterion":
		unknown, known, names = &sc(c).Unknown, sourceOptions, names[1:]
	case len(names) > 2 && names[0] == "redis" && names[1] == "tls":
		unknown, known, names = &tlsc(c).Unknown, redisTLSOptions, names[2:]
	case len(names) > 1 && names[0] == "redis":
		unknown, known, names = &rc(c).Unknown, redisOptions, names[1:]
	default:
		unknown = &c.Unknown
	}
	for _, o := range known {
		if strings.EqualFold(o, names[0]) {
			return
		}
	}
	if *unknown == nil {
		*unknown = make(map[string]any)
	}
	(*unknown)[names[0]] = v
}

func sc(c *Config) *SourceCriterion {
	if c.SourceCriterion == nil {
		c.SourceCriterion = &SourceCriterion{}
	}
	return c.SourceCriterion
}

func ips(c *Config) *IPStrategy {
	if sc(c).IPStrategy == nil {
		c.SourceCriterion.IPStrategy = &IPStrategy{}
	}
	return c.SourceCriterion.IPStrategy
}

func rc(c *Config) *RedisConfig {
	if c.Redis == nil {
		c.Redis = &RedisConfig{}
	}
	return c.Redis
}

func tlsc(c *Config) *RedisTLS {
	if rc(c).TLS == nil {
		c.Redis.TLS = &RedisTLS{}
	}
	return c.Redis.TLS
}

// setInt64, setInt and setBool convert as a weakly typed decoder does: an
// empty string is zero, a number may be given in any base strconv knows.
func setInt64(p *int64, v string) bool {
	if v == "" {
		*p = 0
		return true
	}
	n, err := strconv.ParseInt(v, 0, 64)
	*p = n
	return err == nil
}

func setInt(p *int, v string) bool {
	var n int64
	ok := setInt64(&n, v)
	*p = int(n)
	return ok
}

func setBool(p *bool, v string) bool {
	if v == "" {
		*p = false
		return true
	}
	b, err := strconv.ParseBool(v)
	*p = b
	return err == nil
}

func splitList(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}
