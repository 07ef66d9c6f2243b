package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/windowlimit/windowlimit/shared/httplimit"
	"github.com/windowlimit/windowlimit/shared/inflight"
)

// inFlightOnly reports whether z limits concurrency only: in_flight
// without window or limit.
func (z *Zone) inFlightOnly() bool {
	return z.InFlight > 0 && z.Window == 0 && z.Limit == 0 && z.MaxEvents == 0 && z.LimitPlaceholder == ""
}

// checkInFlight checks the in-flight settings of z, and that a zone of
// in_flight alone sets nothing that needs a window.
func (z *Zone) checkInFlight() error {
	if z.InFlight < 0 {
		return fmt.Errorf("in_flight must be positive, got %d", z.InFlight)
	}
	if z.InFlightTTL != 0 {
		if z.InFlight == 0 {
			return errors.New("in_flight_ttl applies only with in_flight: add in_flight <n> or remove it")
		}
		if time.Duration(z.InFlightTTL) < inflight.MinTTL {
			return fmt.Errorf("in_flight_ttl %v is too short (at least %v: a holder renews within a third of it)", time.Duration(z.InFlightTTL), inflight.MinTTL)
		}
	}
	if !z.inFlightOnly() {
		return nil
	}
	for _, c := range []struct {
		name string
		set  bool
	}{
		{"sub_window", z.SubWindow != 0},
		{"algorithm", z.Algorithm != ""},
		{"cost", z.Cost != 0},
		{"count_status", z.CountStatus != nil},
		{"override", len(z.Overrides) != 0},
	} {
		if c.set {
			return fmt.Errorf("%s needs window and limit: a zone of in_flight alone limits how many requests run at once, not their rate", c.name)
		}
	}
	return nil
}

// provisionInFlightOnly builds the runtime of a zone of in_flight alone:
// no rate, so no zone state; provisionInFlight gives it its slots.
func (h *Handler) provisionInFlightOnly(ctx caddy.Context, name string, cfg *Zone, counters *requestCounters) (*zoneState, error) {
	z := &zoneState{
		name: name,
		key:  newKeySource(cfg.Key, cfg.IPv4Prefix, cfg.IPv6Prefix),
		rejection: caddyhttp.HandlerError{
			Err:        fmt.Errorf("in-flight limit of zone %q exceeded", name),
			StatusCode: http.StatusTooManyRequests,
			Trace:      "rate_limit (zone " + name + ")",
		},
	}
	if err := httplimit.ValidatePrefixBits("ipv4_prefix", cfg.IPv4Prefix, 32); err != nil {
		return nil, err
	}
	if err := httplimit.ValidatePrefixBits("ipv6_prefix", cfg.IPv6Prefix, 128); err != nil {
		return nil, err
	}
	counters.bind(z)
	if len(cfg.MatcherSetsRaw) > 0 {
		sets, err := ctx.LoadModule(cfg, "MatcherSetsRaw")
		if err != nil {
			return nil, fmt.Errorf("loading matchers: %w", err)
		}
		if err := z.matchers.FromInterface(sets); err != nil {
			return nil, err
		}
	}
	return z, nil
}
