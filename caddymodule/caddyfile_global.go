package caddymodule

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
)

const globalOptionName = "rate_limit"

func init() {
	httpcaddyfile.RegisterGlobalOption(globalOptionName, parseGlobalOption)
}

// globalDefaults is the value of the rate_limit global option: the store
// that every rate_limit directive without a store of its own uses, so a
// Caddyfile with many sites names its Redis once.
type globalDefaults struct {
	redis        *RedisConfig
	onStoreError string
}

// parseGlobalOption parses
//
//	{
//	    rate_limit {
//	        store          memory | redis { ... }
//	        on_store_error allow|deny|local
//	    }
//	}
//
// with the same subdirectives as in the rate_limit directive.
func parseGlobalOption(d *caddyfile.Dispenser, existing any) (any, error) {
	if existing != nil {
		return nil, d.Err("rate_limit: the global option is set twice")
	}
	d.Next() // the option's name
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	var h Handler
	ln := newDirectiveLines()
	for d.NextBlock(0) {
		name := d.Val()
		if _, seen := ln.handler[name]; seen {
			return nil, d.Errf("rate_limit: duplicate %s", name)
		}
		ln.handler[name] = d.Token()
		var err error
		switch name {
		case "store":
			err = h.unmarshalStore(d)
		case "on_store_error":
			h.OnStoreError, err = unmarshalFailurePolicy(d)
		default:
			err = unknownSubdirective(d, "rate_limit global option: ", globalSubdirectives, globalHint(name))
		}
		if err != nil {
			return nil, err
		}
	}
	if err := h.checkCombinations(d, ln); err != nil {
		return nil, err
	}
	return &globalDefaults{redis: h.Redis, onStoreError: h.OnStoreError}, nil
}

// applyTo gives h the global store unless h names a store of its own.
// The global on_store_error applies only with the global store: a
// directive's own store comes with its own policy.
func (g *globalDefaults) applyTo(h *Handler) {
	if h.storeGiven || g.redis == nil {
		return
	}
	r := *g.redis
	h.Redis = &r
	if h.OnStoreError == "" {
		h.OnStoreError = g.onStoreError
	}
}
