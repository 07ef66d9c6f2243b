package caddymodule

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// checkBan reports a ban the zone cannot have: a negative one, or one on
// a zone without a window and a limit, whose keys never reach a limit.
func (z *Zone) checkBan() error {
	switch {
	case z.Ban < 0:
		return fmt.Errorf("ban must be positive, got %v", time.Duration(z.Ban))
	case z.Ban > 0 && (z.Window == 0 || z.Limit == 0 && z.MaxEvents == 0 && z.LimitPlaceholder == ""):
		return errors.New("ban needs a window and a limit: a key is banned when it reaches its limit")
	}
	return nil
}

// banInfo is what the admin API says of a key's ban: when it ends, in
// RFC 3339, or nothing for a key that is not banned.
func banInfo(st ratelimit.KeyState, now time.Time) string {
	if st.BannedFor <= 0 {
		return ""
	}
	return now.Add(st.BannedFor).UTC().Format(time.RFC3339)
}

// withBan adds st's ban, if any, to ks: when it ends, and nothing left.
func withBan(ks keyState, st ratelimit.KeyState, now time.Time) keyState {
	if ks.BannedUntil = banInfo(st, now); ks.BannedUntil != "" && ks.Remaining != nil {
		zero := int64(0)
		ks.Remaining = &zero
	}
	return ks
}

// banCollector is caddy_http_rate_limit_bans_total: the bans each zone
// started, in memory or through Redis, since the zone was created.
type banCollector struct {
	desc *prometheus.Desc
}

var banStats = &banCollector{desc: prometheus.NewDesc(
	"caddy_http_rate_limit_bans_total",
	"Keys banned by rate_limit (a zone with ban: refused for the ban from the request that found them at their limit), by zone.",
	[]string{"zone"}, nil,
)}

func (c *banCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *banCollector) Collect(ch chan<- prometheus.Metric) {
	byName := make(map[string]uint64)
	liveZones(func(z *ratelimit.Zone) {
		if z.Ban() > 0 {
			byName[z.Name()] += z.Bans()
		}
	})
	for name, n := range byName {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), name)
	}
}
