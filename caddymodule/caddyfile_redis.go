package caddymodule

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// unmarshalStore parses `store memory` or `store redis [{ ... }]`, the
// dispenser being on "store".
func (h *Handler) unmarshalStore(d *caddyfile.Dispenser) error {
	file, line := d.File(), d.Line()
	kind, err := oneArgBeforeBlock(d)
	if err != nil {
		return err
	}
	h.storeGiven = true
	switch kind {
	case "memory":
		if d.NextBlock(d.Nesting()) {
			return d.Err("store memory: takes no block")
		}
		return nil
	case "redis":
	default:
		return d.Errf("store: unknown store %q (want memory or redis)", kind)
	}
	r := new(RedisConfig)
	seen := make(map[string]bool)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if seen[sub] {
			return d.Errf("store redis: duplicate %s", sub)
		}
		seen[sub] = true
		var err error
		switch sub {
		case "address":
			r.Address, err = oneArg(d)
		case "url":
			r.URL, err = oneArg(d)
		case "addresses":
			r.Addresses = d.RemainingArgs()
			if len(r.Addresses) == 0 {
				err = d.ArgErr()
			}
		case "sentinel":
			args := d.RemainingArgs()
			if len(args) < 2 {
				err = d.Err("sentinel: want a master name and at least one sentinel address")
				break
			}
			r.SentinelMaster, r.SentinelAddresses = args[0], args[1:]
		case "sentinel_username":
			r.SentinelUsername, err = oneArg(d)
		case "sentinel_password":
			r.SentinelPassword, err = oneArg(d)
		case "username":
			r.Username, err = oneArg(d)
		case "password":
			r.Password, err = oneArg(d)
		case "db":
			var s string
			if s, err = oneArg(d); err == nil {
				n, perr := strconv.Atoi(s)
				if perr != nil || n < 0 {
					err = d.Errf("db: want a database number of at least 0, got %q", s)
				}
				r.DB = n
			}
		case "tls":
			r.TLS, err = unmarshalRedisTLS(d)
		case "dial_timeout":
			r.DialTimeout, err = positiveDuration(d)
		case "timeout":
			r.Timeout, err = positiveDuration(d)
		case "pool_size":
			var n int64
			if n, err = positiveInt(d); err == nil {
				if n > 1<<20 {
					err = d.Errf("pool_size: %d is too large", n)
				}
				r.PoolSize = int(n)
			}
		case "key_prefix":
			r.KeyPrefix, err = oneArg(d)
		default:
			err = d.Errf("store redis: unknown subdirective %q", sub)
		}
		if err != nil {
			return err
		}
	}
	if err := r.check(); err != nil {
		return d.Errf("store redis: %v (block at %s:%d)", err, file, line)
	}
	h.Redis = r
	return nil
}

// unmarshalRedisTLS parses `tls [{ ... }]`; a bare `tls` verifies the
// servers against the system's authorities.
func unmarshalRedisTLS(d *caddyfile.Dispenser) (*RedisTLS, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	t := new(RedisTLS)
	seen := make(map[string]bool)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if seen[sub] {
			return nil, d.Errf("tls: duplicate %s", sub)
		}
		seen[sub] = true
		var err error
		switch sub {
		case "ca":
			t.CA, err = oneArg(d)
		case "cert":
			t.Cert, err = oneArg(d)
		case "key":
			t.Key, err = oneArg(d)
		case "server_name":
			t.ServerName, err = oneArg(d)
		case "insecure_skip_verify":
			err = noArgs(d)
			t.InsecureSkipVerify = true
		default:
			err = d.Errf("tls: unknown subdirective %q", sub)
		}
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}
