package caddymodule

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/windowlimit/windowlimit/shared/guard"
	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("rate_limit", parseCaddyfile)
	// Before basic_auth, as caddy-ratelimit's users order it: rejecting a
	// flood is cheaper than checking its passwords.
	httpcaddyfile.RegisterDirectiveOrder("rate_limit", httpcaddyfile.Before, "basic_auth")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	ln := newDirectiveLines()
	if err := m.unmarshalDirective(h.Dispenser, ln); err != nil {
		return nil, err
	}
	if g, ok := h.Option(globalOptionName).(*globalDefaults); ok {
		g.applyTo(m)
	}
	return m, m.checkCombinations(h.Dispenser, ln)
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	rate_limit [<matcher>] {
//	    zone <name> {
//	        key         <placeholders>
//	        window      <duration>
//	        sub_window  <duration>
//	        limit       <n>                  # or events <n>
//	        limit       {placeholder} [<fallback n>]  # a per-request tier
//	        override    <key or CIDR> <n>|unlimited   # repeatable; a CIDR matches the client IP
//	        algorithm   sliding|strict|fixed|log
//	        cost        <n>
//	        ipv4_prefix <bits>
//	        ipv6_prefix <bits>
//	        in_flight   <n>                  # at most n of a key at once; alone or beside window/limit
//	        in_flight_ttl <duration>         # store redis: a dead holder's slots free after it (30s)
//	        ban         <duration>           # refuse a key that reached its limit this long
//	        match {
//	            <matchers>
//	        }
//	    }
//	    store          memory | redis [<host:port> | <redis[s]:// URL>] {
//	        address      <host:port>          # or on the store's line
//	        url          redis[s]://[user:password@]host:port[/db]
//	        addresses    <host:port>...           # Redis Cluster
//	        sentinel     <master> <host:port>...  # Redis Sentinel
//	        sentinel_username <user>              # the sentinels' own ACL user
//	        sentinel_password <password>          # and password
//	        username     <user>
//	        password     <password>               # e.g. {env.REDIS_PASSWORD}
//	        db           <n>
//	        tls {
//	            ca                   <file>
//	            cert                 <file>
//	            key                  <file>
//	            server_name          <name>
//	            insecure_skip_verify
//	        }
//	        dial_timeout <duration>
//	        timeout      <duration>
//	        pool_size    <n>
//	        key_prefix   <prefix>
//	        lease        auto|off
//	    }
//	    on_store_error allow|deny|local
//	    headers        legacy|ietf|both|none
//	    max_keys       <n>
//	    sweep_interval <duration>
//	    jitter         <fraction>
//	    persist        off                    # or:
//	    persist {
//	        directory <absolute path>         # default: rate_limit in Caddy's data directory
//	        interval  <duration>              # default 10s, at least 1s
//	    }
//	    dry_run
//	    log_key
//	}
//
// Every subdirective may appear once (zones once per name; match blocks
// may repeat, and a request matches the zone if it matches any of them).
// A misspelled subdirective is refused with the one meant, and settings
// that cannot run together (persist with store redis, an address without
// a port) are refused here, at adapt time, with the fix.
// A directive without a store of its own takes the store and
// on_store_error of the rate_limit global option, if there is one.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	ln := newDirectiveLines()
	if err := h.unmarshalDirective(d, ln); err != nil {
		return err
	}
	return h.checkCombinations(d, ln)
}

// unmarshalDirective parses the directive's tokens, without the checks
// that depend on the global option's defaults, and keeps in ln the token
// of each setting for those.
func (h *Handler) unmarshalDirective(d *caddyfile.Dispenser, ln *directiveLines) error {
	d.Next() // the directive's name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := make(map[string]bool)
	for d.NextBlock(0) {
		name := d.Val()
		if name != "zone" {
			if seen[name] {
				return d.Errf("duplicate subdirective %s", name)
			}
			seen[name] = true
			ln.handler[name] = d.Token()
		}
		var err error
		switch name {
		case "zone":
			err = h.unmarshalZone(d, ln)
		case "store":
			err = h.unmarshalStore(d)
		case "on_store_error":
			h.OnStoreError, err = unmarshalFailurePolicy(d)
		case "headers":
			var mode string
			if mode, err = oneArg(d); err == nil {
				if _, perr := httplimit.ParseHeaderMode(mode); perr != nil {
					err = d.Errf("headers: %v", perr)
				}
				h.Headers = mode
			}
		case "max_keys":
			var n int64
			if n, err = positiveInt(d); err == nil {
				if n > ratelimit.MaxMaxKeys {
					err = d.Errf("max_keys: %d is too large: at most %d (the zone's memory bound)", n, ratelimit.MaxMaxKeys)
				}
				h.MaxKeys = int(n)
			}
		case "sweep_interval":
			var dur caddy.Duration
			if dur, err = positiveDuration(d); err == nil {
				if time.Duration(dur) < ratelimit.MinSweepInterval {
					err = d.Errf("sweep_interval: %v is too short (at least %v)", time.Duration(dur), ratelimit.MinSweepInterval)
				}
				h.SweepInterval = dur
			}
		case "jitter":
			var s string
			if s, err = oneArg(d); err == nil {
				j, perr := strconv.ParseFloat(s, 64)
				if perr != nil || math.IsNaN(j) || math.IsInf(j, 0) || j < 0 || j > 1 {
					err = d.Errf("jitter: want a fraction from 0 to 1 (0.2 is 20%%), got %q", s)
				}
				h.Jitter = j
			}
		case "persist":
			err = h.unmarshalPersist(d)
		case "dry_run":
			err = noArgs(d)
			h.DryRun = true
		case "log_key":
			err = noArgs(d)
			h.LogKey = true
		case "distributed", "storage":
			err = d.Errf("%s: caddy-ratelimit's storage-synced limits are not supported; "+
				"share one exact limit between instances through Redis instead: "+
				"store redis { address <host:port> } (or url, addresses, sentinel: see docs/caddy.md, The Redis store)", name)
		default:
			err = unknownSubdirective(d, "", handlerSubdirectives, handlerHint(name))
		}
		if err != nil {
			return err
		}
	}
	if len(h.RateLimits) == 0 {
		return d.Err("no zone defined: add at least one zone <name> { ... }")
	}
	return nil
}

// unmarshalZone parses `zone <name> { ... }`, the dispenser being on
// "zone", and keeps the token of each of its settings in ln.
func (h *Handler) unmarshalZone(d *caddyfile.Dispenser, ln *directiveLines) error {
	zoneAt := d.Token()
	name, err := oneArgBeforeBlock(d)
	if err != nil {
		return err
	}
	if name == "" {
		return d.Err("zone name must not be empty")
	}
	if _, dup := h.RateLimits[name]; dup {
		return d.Errf("duplicate zone %q", name)
	}
	z := new(Zone)
	seen := make(map[string]string) // setting -> the subdirective that set it
	at := make(map[string]caddyfile.Token)
	var overrideAt []caddyfile.Token // the line of each of z.Overrides
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		setting := sub
		if sub == "events" {
			setting = "limit"
		}
		if sub != "match" && sub != "override" {
			if first, dup := seen[setting]; dup {
				if first == sub {
					return inZone(name, d.Errf("duplicate %s", sub))
				}
				return inZone(name, d.Errf("%s and %s are the same setting: set one", first, sub))
			}
			seen[setting] = sub
			at[setting] = d.Token()
		}
		var err error
		switch sub {
		case "key":
			var key string
			if key, err = oneArg(d); err == nil {
				if key == "" {
					err = d.Err("key must not be empty (leave it out for the client IP)")
				}
				z.Key = key
			}
		case "window":
			z.Window, err = positiveDuration(d)
		case "sub_window":
			z.SubWindow, err = positiveDuration(d)
		case "limit", "events":
			err = unmarshalLimit(d, z)
		case "override":
			tok := d.Token()
			if err = unmarshalOverride(d, z); err == nil {
				overrideAt = append(overrideAt, tok)
			}
		case "algorithm":
			if z.Algorithm, err = oneArg(d); err == nil {
				if _, perr := ratelimit.ParseAlgorithm(z.Algorithm); perr != nil {
					err = d.WrapErr(perr)
				}
			}
		case "cost":
			z.Cost, err = positiveInt(d)
		case "ipv4_prefix":
			z.IPv4Prefix, err = prefixBits(d, 0, 32)
		case "ipv6_prefix":
			// 0 is not accepted: in JSON it means unset, the default /64,
			// which a Caddyfile says by leaving ipv6_prefix out.
			z.IPv6Prefix, err = prefixBits(d, 1, 128)
		case "count_status":
			z.CountStatus, err = countStatus(d)
		case "in_flight":
			z.InFlight, err = positiveInt(d)
		case "in_flight_ttl":
			z.InFlightTTL, err = positiveDuration(d)
		case "ban":
			z.Ban, err = positiveDuration(d)
		case "match":
			var set caddy.ModuleMap
			if set, err = parseMatchBlock(d); err == nil {
				z.MatcherSetsRaw = append(z.MatcherSetsRaw, set)
			}
		default:
			err = unknownSubdirective(d, "", zoneSubdirectives, zoneHint(sub))
		}
		if err != nil {
			return inZone(name, err)
		}
	}
	// Check the values that depend on each other now that all are read,
	// each error at the line of the value it names.
	if err := checkZone(z, at, overrideAt); err != nil {
		return errAt(err.at, inZone(name, err.err), zoneAt)
	}
	if h.RateLimits == nil {
		h.RateLimits = make(map[string]*Zone)
	}
	h.RateLimits[name] = z
	at["zone"] = zoneAt
	ln.zones[name] = at
	return nil
}

// inZone names the zone in err, an error of one of its settings, which
// already ends with that setting's line: every error inside a zone says
// which zone, as the errors found once the zone is read do.
func inZone(name string, err error) error {
	return fmt.Errorf("zone %q: %w", name, err)
}

// zoneError is a bad value of a zone found once the zone is read, and the
// token of the subdirective that set it (zero when no one line holds it,
// as for a required setting left out).
type zoneError struct {
	err error
	at  caddyfile.Token
}

// checkZone checks z as Zone.rule does, and finds the line to blame: that
// of the setting a core error names, of the override that fails, or none.
// at holds the token of each setting given (events as limit); overrideAt
// that of each override.
func checkZone(z *Zone, at map[string]caddyfile.Token, overrideAt []caddyfile.Token) *zoneError {
	if err := z.checkInFlight(); err != nil {
		return &zoneError{err: err, at: at["in_flight"]}
	}
	if err := z.checkBan(); err != nil {
		return &zoneError{err: err, at: at["ban"]}
	}
	bare := *z
	bare.Overrides = nil
	r, err := bare.rule()
	if err != nil {
		var fe *ratelimit.FieldError
		if !errors.As(err, &fe) {
			return &zoneError{err: err}
		}
		tok, ok := at[spelling.Name(fe.Field)]
		if !ok && fe.Field == ratelimit.FieldSubWindow {
			// A sub-window required but not given: the window is the
			// value that the default cannot split.
			tok = at["window"]
		}
		return &zoneError{err: err, at: tok}
	}
	// Overrides one by one, so that the error blames the first one that
	// fails (for "given twice", the second).
	for i := range z.Overrides {
		some := bare
		some.Overrides = z.Overrides[:i+1]
		if _, err := some.overrides(r); err != nil {
			return &zoneError{err: err, at: overrideAt[i]}
		}
	}
	return nil
}

// errAt returns err at the file and line of tok, as Dispenser.Errf words
// it (import chain included), or at those of fallback when tok is zero:
// for an error found after the dispenser has left the value's line.
func errAt(tok caddyfile.Token, err error, fallback caddyfile.Token) error {
	if tok.File == "" && tok.Line == 0 {
		tok = fallback
	}
	d := caddyfile.NewDispenser([]caddyfile.Token{tok})
	d.Next()
	return d.WrapErr(err)
}

// parseMatchBlock parses `match { <matchers> }` as Caddy does, the
// dispenser being on "match", but reports a matcher that does not exist
// at its own line (Caddy's parser reports it at the end of the block).
func parseMatchBlock(d *caddyfile.Dispenser) (caddy.ModuleMap, error) {
	seg := d.NextSegment()
	check := caddyfile.NewDispenser(seg)
	check.Next()
	// The same walk as caddyhttp.ParseCaddyfileNestedMatcherSet's.
	for nesting := check.Nesting(); check.NextArg() || check.NextBlock(nesting); {
		if !check.Token().Quoted() {
			name := check.Val()
			if _, err := caddy.GetModule("http.matchers." + name); err != nil {
				return nil, check.Errf("getting matcher module '%s': %v", name, err)
			}
		}
		check.NextSegment()
	}
	parse := caddyfile.NewDispenser(seg)
	parse.Next()
	return caddyhttp.ParseCaddyfileNestedMatcherSet(parse)
}

// unmarshalLimit parses `limit <n>` or `limit {placeholder} [<n>]`, the
// dispenser being on "limit" (or "events").
func unmarshalLimit(d *caddyfile.Dispenser, z *Zone) error {
	name := d.Val()
	args := d.RemainingArgs()
	if len(args) == 0 || len(args) > 2 {
		return d.ArgErr()
	}
	if !strings.HasPrefix(args[0], "{") {
		if len(args) > 1 {
			return d.ArgErr()
		}
		n, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || n <= 0 {
			return d.Errf("%s: want a positive integer or a placeholder, got %q", name, args[0])
		}
		z.Limit = n
		return nil
	}
	if !isSinglePlaceholder(args[0]) {
		return d.Errf("%s: want one placeholder such as {plan_limit}, got %q", name, args[0])
	}
	z.LimitPlaceholder = args[0]
	if len(args) == 2 {
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil || n <= 0 {
			return d.Errf("%s: the fallback limit must be a positive integer, got %q", name, args[1])
		}
		z.Limit = n
	}
	return nil
}

// unmarshalOverride parses `override <key or CIDR> <n>|unlimited`. An
// argument with a slash, or that is an IP address, is a CIDR, matched
// against the client IP (see Override.CIDR).
func unmarshalOverride(d *caddyfile.Dispenser, z *Zone) error {
	args := d.RemainingArgs()
	if len(args) != 2 {
		return d.Errf("override: want <key or CIDR> <limit>|unlimited, got %d arguments", len(args))
	}
	n, err := ratelimit.ParseOverrideLimit(args[1])
	if err != nil {
		return d.Errf("%v", err)
	}
	var o Override
	if _, ipErr := netip.ParseAddr(args[0]); ipErr == nil || strings.Contains(args[0], "/") {
		o.CIDR = args[0]
	} else {
		o.Key = args[0]
	}
	if n == ratelimit.Unlimited {
		o.Unlimited = true
	} else {
		o.Limit = n
	}
	z.Overrides = append(z.Overrides, o)
	return nil
}

// oneArg returns the subdirective's only argument.
// unmarshalFailurePolicy parses the argument of on_store_error.
func unmarshalFailurePolicy(d *caddyfile.Dispenser) (string, error) {
	policy, err := oneArg(d)
	if err != nil {
		return "", err
	}
	if _, err := guard.ParseFailurePolicy(policy); err != nil {
		return "", d.Errf("on_store_error: %v", err)
	}
	return policy, nil
}

func oneArg(d *caddyfile.Dispenser) (string, error) {
	if !d.NextArg() {
		return "", d.ArgErr()
	}
	v := d.Val()
	if d.NextArg() {
		return "", d.ArgErr()
	}
	return v, nil
}

// oneArgBeforeBlock returns the only argument of a subdirective that opens
// a block, leaving the dispenser before the block.
func oneArgBeforeBlock(d *caddyfile.Dispenser) (string, error) {
	if !d.NextArg() {
		return "", d.ArgErr()
	}
	v := d.Val()
	if d.CountRemainingArgs() > 0 {
		d.NextArg()
		return "", d.ArgErr()
	}
	return v, nil
}

// noArgs checks that a flag has no argument.
func noArgs(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// positiveInt parses the only argument as an integer greater than zero.
func positiveInt(d *caddyfile.Dispenser) (int64, error) {
	name := d.Val()
	s, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, d.Errf("%s: want a positive integer, got %q", name, s)
	}
	return n, nil
}

// positiveDuration parses the only argument as a duration greater than
// zero (Go syntax, plus "d" for days).
func positiveDuration(d *caddyfile.Dispenser) (caddy.Duration, error) {
	name := d.Val()
	s, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur <= 0 {
		return 0, d.Errf("%s: want a positive duration such as 1m or 30s, got %q", name, s)
	}
	return caddy.Duration(dur), nil
}

// prefixBits parses the only argument as a prefix length in [min, max].
func prefixBits(d *caddyfile.Dispenser, min, max int) (int, error) {
	name := d.Val()
	s, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		return 0, d.Errf("%s: want a prefix length from %d to %d, got %q", name, min, max, s)
	}
	return n, nil
}
