package traefikplugin

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// decoded returns c with its Options decoded into its fields, or c itself
// when it has none. It does not modify c, which Traefik shares between
// the routers that use the middleware.
//
// Traefik decodes a plugin's options with mapstructure, weakly typed, and
// a value its decoder cannot convert (limit: "ten") fails the middleware
// before New is called, which disables the router (see misconfigured). So
// every field of Config is hidden from that decoder, every option lands
// in Options as Traefik read it, and the plugin decodes it here, where
// each error becomes the misconfigured middleware's and names its option.
// It also reads numbers as written, in decimal, where mapstructure reads
// "010" as 8 and "0x10" as 16.
func (c *Config) decoded() (*Config, error) {
	if len(c.Options) == 0 {
		return c, nil
	}
	d := *c
	d.Options = nil
	err := decodeBlock("", c.Options, topOptions, func(name string, v any) error { return d.set(name, v) })
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// decodeBlock calls set with each option of the block at path, in sorted
// order, named as known spells it. It first refuses an option that
// matches none of known, or one given twice in two cases (Traefik matches
// option names in any case).
func decodeBlock(path string, options map[string]any, known []string, set func(name string, v any) error) error {
	keys := make([]string, 0, len(options))
	for k := range options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	names := make([]string, len(keys))
	var unknown map[string]any
	for i, k := range keys {
		names[i] = knownName(k, known)
		if names[i] == "" {
			if unknown == nil {
				unknown = make(map[string]any)
			}
			unknown[k] = options[k]
		}
	}
	if err := unknownOption(path, unknown, known); err != nil {
		return err
	}
	for i, k := range keys {
		for j := 0; j < i; j++ {
			if names[j] == names[i] {
				return fieldError(path+k, "given twice, also as "+path+keys[j]+" (Traefik matches option names in any case): keep one")
			}
		}
	}
	for i, k := range keys {
		if err := set(names[i], options[k]); err != nil {
			return err
		}
	}
	return nil
}

// knownName returns the option of known that k names in any case, or "".
func knownName(k string, known []string) string {
	for _, o := range known {
		if strings.EqualFold(k, o) {
			return o
		}
	}
	return ""
}

// set decodes the top-level option name.
func (c *Config) set(name string, v any) error {
	var err error
	switch name {
	case "window":
		c.Window, err = stringValue(name, v)
	case "subWindow":
		c.SubWindow, err = stringValue(name, v)
	case "limit":
		c.Limit, err = intValue(name, v)
	case "algorithm":
		c.Algorithm, err = stringValue(name, v)
	case "cost":
		c.Cost, err = intValue(name, v)
	case "sourceCriterion":
		c.SourceCriterion, err = decodeSourceCriterion(v)
	case "headers":
		c.Headers, err = stringValue(name, v)
	case "maxKeys":
		c.MaxKeys, err = smallIntValue(name, v)
	case "dryRun":
		c.DryRun, err = boolValue(name, v)
	case "logKey":
		c.LogKey, err = boolValue(name, v)
	case "statusCode":
		c.StatusCode, err = smallIntValue(name, v)
	case "message":
		c.Message, err = stringValue(name, v)
	case "redis":
		c.Redis, err = decodeRedis(v)
	case "countStatus":
		c.CountStatus, err = listValue(name, v)
	case "overrides":
		c.Overrides, err = listValue(name, v)
	case "onStoreError":
		c.OnStoreError, err = stringValue(name, v)
	case "persist":
		c.Persist, err = decodePersist(v)
	case "inFlight":
		c.InFlight, err = intValue(name, v)
	case "inFlightTTL":
		c.InFlightTTL, err = stringValue(name, v)
	case "ban":
		c.Ban, err = stringValue(name, v)
	}
	return err
}

// decodeSourceCriterion decodes the sourceCriterion block.
func decodeSourceCriterion(v any) (*SourceCriterion, error) {
	m, err := blockValue("sourceCriterion", v)
	if m == nil || err != nil {
		return nil, err
	}
	sc := &SourceCriterion{}
	return sc, decodeBlock("sourceCriterion.", m, sourceOptions, func(name string, v any) error {
		var err error
		switch name {
		case "ipStrategy":
			sc.IPStrategy, err = decodeIPStrategy(v)
		case "requestHeaderName":
			sc.RequestHeaderName, err = stringValue("sourceCriterion."+name, v)
		case "requestHost":
			sc.RequestHost, err = boolValue("sourceCriterion."+name, v)
		}
		return err
	})
}

// decodeIPStrategy decodes the sourceCriterion.ipStrategy block.
func decodeIPStrategy(v any) (*IPStrategy, error) {
	const path = "sourceCriterion.ipStrategy"
	m, err := blockValue(path, v)
	if m == nil || err != nil {
		return nil, err
	}
	ip := &IPStrategy{}
	return ip, decodeBlock(path+".", m, ipStrategyOptions, func(name string, v any) error {
		var err error
		switch name {
		case "depth":
			ip.Depth, err = smallIntValue(path+"."+name, v)
		case "excludedIPs":
			ip.ExcludedIPs, err = listValue(path+"."+name, v)
		case "ipv6Subnet":
			ip.IPv6Subnet, err = smallIntValue(path+"."+name, v)
		}
		return err
	})
}

// decodeRedis decodes the redis block.
func decodeRedis(v any) (*RedisConfig, error) {
	m, err := blockValue("redis", v)
	if m == nil || err != nil {
		return nil, err
	}
	r := &RedisConfig{}
	return r, decodeBlock("redis.", m, redisOptions, func(name string, v any) error {
		path := "redis." + name
		var err error
		switch name {
		case "endpoints":
			r.Endpoints, err = listValue(path, v)
		case "username":
			r.Username, err = stringValue(path, v)
		case "password":
			r.Password, err = stringValue(path, v)
		case "db":
			r.DB, err = smallIntValue(path, v)
		case "tls":
			r.TLS, err = decodeRedisTLS(v)
		case "dialTimeout":
			r.DialTimeout, err = stringValue(path, v)
		case "readTimeout":
			r.ReadTimeout, err = stringValue(path, v)
		case "writeTimeout":
			r.WriteTimeout, err = stringValue(path, v)
		case "poolSize":
			r.PoolSize, err = smallIntValue(path, v)
		case "maxActiveConns":
			r.MaxActiveConns, err = smallIntValue(path, v)
		case "minIdleConns":
			r.MinIdleConns, err = smallIntValue(path, v)
		case "keyPrefix":
			r.KeyPrefix, err = stringValue(path, v)
		case "lease":
			r.Lease, err = stringValue(path, v)
		}
		return err
	})
}

// decodeRedisTLS decodes the redis.tls block.
func decodeRedisTLS(v any) (*RedisTLS, error) {
	m, err := blockValue("redis.tls", v)
	if m == nil || err != nil {
		return nil, err
	}
	t := &RedisTLS{}
	return t, decodeBlock("redis.tls.", m, redisTLSOptions, func(name string, v any) error {
		path := "redis.tls." + name
		var err error
		switch name {
		case "ca":
			t.CA, err = stringValue(path, v)
		case "cert":
			t.Cert, err = stringValue(path, v)
		case "key":
			t.Key, err = stringValue(path, v)
		case "insecureSkipVerify":
			t.InsecureSkipVerify, err = boolValue(path, v)
		}
		return err
	})
}

// decodePersist decodes the persist block.
func decodePersist(v any) (*PersistConfig, error) {
	m, err := blockValue("persist", v)
	if m == nil || err != nil {
		return nil, err
	}
	p := &PersistConfig{}
	return p, decodeBlock("persist.", m, persistOptions, func(name string, v any) error {
		var err error
		switch name {
		case "directory":
			p.Directory, err = stringValue("persist."+name, v)
		case "interval":
			p.Interval, err = stringValue("persist."+name, v)
		}
		return err
	})
}

// blockValue returns the options of a block, or nil when v is empty (an
// option given no value).
func blockValue(path string, v any) (map[string]any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		if v == "" {
			return nil, nil
		}
	case map[string]any:
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			s, ok := k.(string)
			if !ok {
				return nil, fieldError(path, "option names must be strings, got "+describe(k))
			}
			m[s] = e
		}
		return m, nil
	}
	return nil, fieldError(path, "must be a block of options, got "+describe(v))
}

// stringValue returns v as a string. Numbers and booleans are written as
// Traefik's decoder writes them.
func stringValue(path string, v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	}
	return "", fieldError(path, "must be a single value, got "+describe(v))
}

// intValue returns v as a whole number. A string is read in decimal, as
// written: "010" is 10 (Traefik's own decoder would read 8), and "0x10",
// "1e3" and "1.5" are refused. An empty value is 0, the default.
func intValue(path string, v any) (int64, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case string:
		s := strings.TrimSpace(v)
		if s == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return 0, fieldError(path, "too large, got "+quoteValue(v))
			}
			return 0, fieldError(path, "must be a whole number in decimal, got "+quoteValue(v))
		}
		return n, nil
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case uint64:
		if v > math.MaxInt64 {
			return 0, fieldError(path, "too large, got "+strconv.FormatUint(v, 10))
		}
		return int64(v), nil
	case float64:
		if v != math.Trunc(v) || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, fieldError(path, "must be a whole number, got "+strconv.FormatFloat(v, 'g', -1, 64))
		}
		if v >= math.MaxInt64 || v <= math.MinInt64 {
			return 0, fieldError(path, "too large, got "+strconv.FormatFloat(v, 'g', -1, 64))
		}
		return int64(v), nil
	}
	return 0, fieldError(path, "must be a whole number, got "+describe(v))
}

// smallIntValue is intValue for a field of type int, refusing what an
// int32 cannot hold: no option of Config needs more.
func smallIntValue(path string, v any) (int, error) {
	n, err := intValue(path, v)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt32 || n < math.MinInt32 {
		return 0, fieldError(path, "too large, got "+strconv.FormatInt(n, 10))
	}
	return int(n), nil
}

// boolValue returns v as a boolean: true or false, in any case, or a
// string or number strconv.ParseBool reads. An empty value is false.
func boolValue(path string, v any) (bool, error) {
	switch v := v.(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		if strings.TrimSpace(v) == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return false, fieldError(path, "must be true or false, got "+quoteValue(v))
		}
		return b, nil
	case int:
		if v == 0 || v == 1 {
			return v == 1, nil
		}
	case int64:
		if v == 0 || v == 1 {
			return v == 1, nil
		}
	}
	return false, fieldError(path, "must be true or false, got "+describe(v))
}

// listValue returns v as a list of strings: a list of single values, or
// a string of comma-separated values, as labels give a list.
func listValue(path string, v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		if v == "" {
			return []string{}, nil
		}
		return strings.Split(v, ","), nil
	case []string:
		return v, nil
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			s, err := stringValue(path+"["+strconv.Itoa(i)+"]", e)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	s, err := stringValue(path, v)
	if err != nil {
		return nil, fieldError(path, "must be a list, got "+describe(v))
	}
	return []string{s}, nil
}

// describe names the kind of a value that does not fit its option.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "nothing"
	case string:
		return quoteValue(v)
	case bool:
		return strconv.FormatBool(v)
	case int, int64, uint64, float64:
		s, _ := stringValue("", v)
		return s
	case map[string]any, map[any]any:
		return "a block of options"
	case []any, []string:
		return "a list"
	}
	return "a value of another kind"
}
