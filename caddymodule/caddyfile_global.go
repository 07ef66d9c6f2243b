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
	seen := make(map[string]bool)
	for d.NextBlock(0) {
		name := d.Val()
		if seen[name] {
			return nil, d.Errf("rate_limit: duplicate %s", name)
		}
		seen[name] = true
		var err error
		switch name {
		case "store":
			err = h.unmarshalStore(d)
		case "on_store_error":
			h.OnStoreError, err = unmarshalFailurePolicy(d)
		default:
			err = d.Errf("rate_limit global option: unknown subdirective %q "+
				"(only store and on_store_error are set here; zones belong in each site's rate_limit)", name)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := h.checkStore(d); err != nil {
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
