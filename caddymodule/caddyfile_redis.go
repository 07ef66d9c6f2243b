package caddymodule

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// unmarshalStore parses `store memory` or `store redis [{ ... }]`, the
// dispenser being on "store".
func (h *Handler) unmarshalStore(d *caddyfile.Dispenser) error {
	storeAt := d.Token()
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
	at := make(map[string]caddyfile.Token) // subdirective -> its token
	target := ""                           // the first of address, url, addresses and sentinel
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if _, dup := at[sub]; dup {
			return d.Errf("store redis: duplicate %s", sub)
		}
		at[sub] = d.Token()
		switch sub {
		case "address", "url", "addresses", "sentinel":
			if target != "" {
				return d.Errf("store redis: set one of address, url, addresses (cluster) and sentinel (%s is set above)", target)
			}
			target = sub
		}
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
		case "dial_timeout", "timeout":
			var dur caddy.Duration
			if dur, err = positiveDuration(d); err == nil {
				if terr := checkRedisTimeout(sub, dur); terr != nil {
					err = d.Errf("store redis: %v", terr)
				}
			}
			if sub == "timeout" {
				r.Timeout = dur
			} else {
				r.DialTimeout = dur
			}
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
		case "lease":
			if r.Lease, err = oneArg(d); err == nil && r.Lease != redisstore.LeaseAuto && r.Lease != redisstore.LeaseOff {
				// Not redisstore.ParseLease: it takes "" for the default, which a
				// Caddyfile writes by leaving the line out.
				err = d.Errf("store redis: lease: want auto or off, got %q", r.Lease)
			}
		default:
			err = d.Errf("store redis: unknown subdirective %q", sub)
		}
		if err != nil {
			return err
		}
	}
	if r.SentinelMaster == "" {
		for _, sub := range []string{"sentinel_username", "sentinel_password"} {
			if tok, ok := at[sub]; ok {
				return errAt(tok, errors.New("store redis: sentinel_username and sentinel_password apply only with sentinel"), storeAt)
			}
		}
	}
	// What is left depends on several settings: blame the one the error
	// names (db for a cluster's db), else the store's line.
	if err := r.check(); err != nil {
		var tok caddyfile.Token
		var fe *ratelimit.FieldError
		if errors.As(err, &fe) {
			tok = at[spelling.Name(fe.Field)]
		}
		return errAt(tok, fmt.Errorf("store redis: %w", err), storeAt)
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
	at := make(map[string]caddyfile.Token)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if _, dup := at[sub]; dup {
			return nil, d.Errf("tls: duplicate %s", sub)
		}
		at[sub] = d.Token()
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
	// A cert without its key, or a key without its cert: at its line.
	if err := spelling.Error((&redisstore.Settings{TLSCert: t.Cert, TLSKey: t.Key}).Check()); err != nil {
		tok, ok := at["cert"]
		if !ok {
			tok = at["key"]
		}
		return nil, errAt(tok, fmt.Errorf("store redis: %w", err), d.Token())
	}
	return t, nil
}
