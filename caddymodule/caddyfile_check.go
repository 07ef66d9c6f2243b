package caddymodule

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
	"github.com/windowlimit/windowlimit/shared/redisstore"
)

// directiveLines holds the tokens of what a rate_limit directive (or the
// global option) set: the checks of settings that only fail together
// run once the directive and the global option are read, and blame the
// line of the setting to change.
type directiveLines struct {
	handler map[string]caddyfile.Token            // subdirective -> its token
	zones   map[string]map[string]caddyfile.Token // zone -> setting -> its token; "zone": the zone's own
}

func newDirectiveLines() *directiveLines {
	return &directiveLines{
		handler: make(map[string]caddyfile.Token),
		zones:   make(map[string]map[string]caddyfile.Token),
	}
}

// checkCombinations refuses the settings that Provision would refuse
// only together, once the global option's store is in, each at the line
// of a setting to change and with the fix in the message: `caddy adapt`
// refuses what `caddy run` could not run.
func (h *Handler) checkCombinations(d *caddyfile.Dispenser, ln *directiveLines) error {
	if h.OnStoreError != "" && h.Redis == nil {
		return errAt(ln.handler["on_store_error"],
			errors.New("on_store_error applies only to the Redis store: add store redis { ... } or remove it"), d.Token())
	}
	if p := h.Persist; p != nil && !p.Off && h.Redis != nil && h.OnStoreError != "local" {
		return errAt(ln.handler["persist"], errors.New(h.persistWithRedis()), d.Token())
	}
	if h.Redis == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(h.RateLimits)) {
		if err := checkRedisZone(name, h.RateLimits[name], ln.zones[name]); err != nil {
			return err
		}
	}
	return nil
}

// persistWithRedis is the error of a persist block in a directive whose
// zones Redis counts: nothing would be saved, and the fix depends on
// where the store comes from.
func (h *Handler) persistWithRedis() string {
	const why = "persist: Redis keeps the counts of this rate_limit's zones (it persists them by its own configuration), so there is nothing to save"
	if !h.storeGiven {
		return why + "; this rate_limit takes store redis from the global rate_limit option: " +
			"add store memory here to count its zones in memory and save them, or remove persist, or add on_store_error local"
	}
	return why + ": remove persist; or use two rate_limit blocks, one with store redis and one without (the zones to count in memory and save); " +
		"or add on_store_error local, to save the memory zones that decide while Redis fails"
}

// checkRedisZone refuses a zone that Redis cannot count (a name with
// braces, a window not in whole microseconds), as Provision does, at the
// line of the setting: at holds the zone's tokens.
func checkRedisZone(name string, z *Zone, at map[string]caddyfile.Token) error {
	r, err := z.rule()
	if err != nil {
		return nil // refused where the zone is read
	}
	if err := r.Normalize(); err != nil {
		return nil
	}
	err = redisstore.CheckRule(name, r)
	if err == nil {
		return nil
	}
	tok := at["zone"]
	var fe *ratelimit.FieldError
	if errors.As(err, &fe) {
		if t, ok := at[spelling.Name(fe.Field)]; ok {
			tok = t
		} else if fe.Field == ratelimit.FieldSubWindow {
			tok = at["window"] // the default sub-window, a tenth of it
		}
	}
	return errAt(tok, fmt.Errorf("store redis: zone %q: %w (or count this zone in memory: a rate_limit block without store redis)",
		name, spelling.Error(err)), at["zone"])
}
