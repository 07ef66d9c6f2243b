package caddymodule

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/redis/go-redis/v9"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// unmarshalStore parses `store memory` or `store redis [<address or URL>]
// [{ ... }]`, the dispenser being on "store". The address on the store's
// line is the block's address (or url, for a redis:// or rediss:// URL),
// as users write it.
func (h *Handler) unmarshalStore(d *caddyfile.Dispenser) error {
	storeAt := d.Token()
	args := d.RemainingArgs()
	if len(args) == 0 {
		return d.ArgErr()
	}
	h.storeGiven = true
	switch kind := args[0]; kind {
	case "memory":
		if len(args) > 1 {
			return d.ArgErr()
		}
		if d.NextBlock(d.Nesting()) {
			return d.Err("store memory: takes no block")
		}
		return nil
	case "redis":
	default:
		return d.Errf("store: unknown store %q (want memory or redis)", kind)
	}
	if len(args) > 2 {
		return d.Errf("store redis: one address or URL on this line, got %d; "+
			"a Redis Cluster's nodes go in the block: store redis { addresses <host:port>... }", len(args)-1)
	}
	r := new(RedisConfig)
	at := make(map[string]caddyfile.Token) // subdirective -> its token
	target := ""                           // the first of address, url, addresses and sentinel
	if len(args) == 2 {
		target = "address"
		if isRedisURL(args[1]) {
			target = "url"
		}
		if err := r.setTarget(target, args[1:]); err != nil {
			return d.Errf("store redis: %v", err)
		}
		if target == "address" {
			target += " " + args[1] // a URL is not repeated: it may hold a password
		}
		target += " on the store redis line"
	}
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
		case "address", "url":
			var v string
			if v, err = oneArg(d); err == nil {
				if terr := r.setTarget(sub, []string{v}); terr != nil {
					err = d.Errf("store redis: %v", terr)
				}
			}
		case "addresses":
			args := d.RemainingArgs()
			if len(args) == 0 {
				err = d.ArgErr()
			} else if terr := r.setTarget(sub, args); terr != nil {
				err = d.Errf("store redis: %v", terr)
			}
		case "sentinel":
			args := d.RemainingArgs()
			if len(args) < 2 {
				err = d.Err("sentinel: want a master name and at least one sentinel address")
				break
			}
			if terr := r.setTarget(sub, args); terr != nil {
				err = d.Errf("store redis: %v", terr)
			}
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
			err = unknownSubdirective(d, "store redis: ", redisSubdirectives, "")
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
			err = unknownSubdirective(d, "tls: ", redisTLSSubdirectives, "")
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

// isRedisURL reports whether s, the argument of `store redis <s>`, is a
// URL rather than an address.
func isRedisURL(s string) bool {
	return strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://")
}

// setTarget sets where r connects (sub is address, url, addresses or
// sentinel; args its arguments) and checks what can be checked before
// the placeholders are replaced: an address has a port, a URL parses. A
// value with a placeholder is checked at provisioning, once replaced.
func (r *RedisConfig) setTarget(sub string, args []string) error {
	switch sub {
	case "address":
		r.Address = args[0]
		return checkAddressArg("address", args[0], "6379")
	case "url":
		r.URL = args[0]
		return checkURLArg(args[0])
	case "addresses":
		r.Addresses = args
		for i, a := range args {
			if err := checkAddressArg("addresses["+strconv.Itoa(i)+"]", a, "6379"); err != nil {
				return err
			}
		}
	case "sentinel":
		r.SentinelMaster, r.SentinelAddresses = args[0], args[1:]
		for i, a := range args[1:] {
			if err := checkAddressArg("sentinel address "+strconv.Itoa(i+1), a, "26379"); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkAddressArg checks that addr, unless it holds a placeholder, is
// host:port, and says how to write it, with the default port, when only
// the port is missing.
func checkAddressArg(field, addr, port string) error {
	if strings.Contains(addr, "{") {
		return nil
	}
	err := redisstore.CheckAddress(addr)
	if err == nil {
		return nil
	}
	host := addr
	if ip, perr := netip.ParseAddr(addr); perr == nil {
		host = ip.String()
	} else if addr == "" || strings.Contains(addr, ":") || strings.Contains(addr, "/") {
		return fmt.Errorf("%s: %w", field, err)
	}
	return fmt.Errorf("%s: %q has no port: write %s", field, addr, net.JoinHostPort(host, port))
}

// checkURLArg checks that u, unless it holds a placeholder, is a Redis URL
// with a database Redis has, as provisioning does.
func checkURLArg(u string) error {
	if strings.Contains(u, "{") {
		return nil
	}
	parsed, err := redis.ParseURL(u)
	if err != nil {
		// The URL may hold a password: name the field, not the value.
		return fmt.Errorf("url: %v", redactURLError(err, u))
	}
	if err := (&redisstore.Settings{DB: parsed.DB}).Check(); err != nil {
		return fmt.Errorf("url: %w", spelling.Error(err))
	}
	return nil
}
