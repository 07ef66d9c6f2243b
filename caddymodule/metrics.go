package caddymodule

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/windowlimit/windowlimit/shared/ratelimit"
)

// The metrics live for the process, not for one config: every config load
// gets a new registry from Caddy and registers the same collectors in it,
// so counters keep counting across reloads and several handlers in one
// config share them. Labels are the zone and the decision, never the key,
// whose values are unbounded and may be personal data.
var (
	metricsOnce sync.Once
	counters    *requestCounters
	keysGauge   *keysCollector
	storeStats  = newStoreCollector()
)

// Decision label values.
const (
	decisionAllowed = "allowed" // the request passed all its zones
	decisionDenied  = "denied"  // this zone rejected the request
	decisionDryRun  = "dry_run" // this zone would have rejected it (dry_run)
)

// requestCounters counts decisions per zone.
type requestCounters struct {
	vec *prometheus.CounterVec
}

// bind resolves z's counters once, so that the per-request path is an
// atomic add instead of a label lookup.
func (c *requestCounters) bind(z *zoneState) {
	z.allowed = c.vec.WithLabelValues(z.name, decisionAllowed)
	z.denied = c.vec.WithLabelValues(z.name, decisionDenied)
	z.dryRun = c.vec.WithLabelValues(z.name, decisionDryRun)
}

// registerMetrics registers the collectors in reg, once per registry, and
// returns the counters. A nil reg (a context not made by Caddy) skips the
// registration.
func registerMetrics(reg *prometheus.Registry) (*requestCounters, error) {
	metricsOnce.Do(func() {
		counters = &requestCounters{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy",
			Subsystem: "http",
			Name:      "rate_limit_requests_total",
			Help:      "Requests checked by rate_limit, by zone and decision (allowed, denied, dry_run).",
		}, []string{"zone", "decision"})}
		keysGauge = &keysCollector{
			desc: prometheus.NewDesc(
				"caddy_http_rate_limit_keys",
				"Keys tracked in memory by rate_limit, by zone.",
				[]string{"zone"}, nil,
			),
			evictions: prometheus.NewDesc(
				"caddy_http_rate_limit_evictions_total",
				"Keys evicted from a full zone while they still counted, by zone (they come back with an over-estimate of their count).",
				[]string{"zone"}, nil,
			),
		}
	})
	if reg == nil {
		return counters, nil
	}
	for _, c := range []prometheus.Collector{counters.vec, keysGauge, storeStats} {
		if err := reg.Register(c); err != nil {
			var dup prometheus.AlreadyRegisteredError
			if !errors.As(err, &dup) {
				return nil, err
			}
		}
	}
	return counters, nil
}

// keysCollector reports, at scrape time, how many keys each live zone
// tracks and how many it evicted while they still counted. Zones of one
// name with different settings (during a reload that changes them) are
// summed, so a name is reported once.
type keysCollector struct {
	desc, evictions *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c *keysCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.desc
	ch <- c.evictions
}

// Collect implements prometheus.Collector.
func (c *keysCollector) Collect(ch chan<- prometheus.Metric) {
	byName := make(map[string]ratelimit.ZoneStats)
	liveZones(func(z *ratelimit.Zone) {
		st, sum := z.Stats(), byName[z.Name()]
		sum.Keys += st.Keys
		sum.Evictions += st.Evictions
		byName[z.Name()] = sum
	})
	for name, st := range byName {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(st.Keys), name)
		ch <- prometheus.MustNewConstMetric(c.evictions, prometheus.CounterValue, float64(st.Evictions), name)
	}
}

// storeCollector reports, at scrape time, the Redis guards' counters,
// summed over every Redis store of the process (closed ones included, so
// the counters never go down).
type storeCollector struct {
	errors, fallbacks, cacheHits, outOfMemory, overloaded, open *prometheus.Desc
}

func newStoreCollector() *storeCollector {
	return &storeCollector{
		errors: prometheus.NewDesc("caddy_http_rate_limit_store_errors_total",
			"Errors of the Redis store (each one decided by on_store_error).", nil, nil),
		fallbacks: prometheus.NewDesc("caddy_http_rate_limit_store_fallbacks_total",
			"Requests decided by on_store_error because Redis failed, its circuit breaker was open, it was out of memory, or this instance's backlog of Redis calls was too long.", nil, nil),
		cacheHits: prometheus.NewDesc("caddy_http_rate_limit_store_denial_cache_hits_total",
			"Requests denied from the local denial cache without asking Redis.", nil, nil),
		outOfMemory: prometheus.NewDesc("caddy_http_rate_limit_store_out_of_memory_total",
			"Requests Redis would have admitted but could not count (over maxmemory), decided by on_store_error.", nil, nil),
		overloaded: prometheus.NewDesc("caddy_http_rate_limit_store_overloaded_total",
			"Requests whose Redis call was not sent because it waited too long for a free pipeline (load on this instance, not a Redis failure), decided by on_store_error.", nil, nil),
		open: prometheus.NewDesc("caddy_http_rate_limit_store_breakers_open",
			"Redis stores whose circuit breaker is open (Redis unavailable).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.errors
	ch <- c.fallbacks
	ch <- c.cacheHits
	ch <- c.outOfMemory
	ch <- c.overloaded
	ch <- c.open
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	st, open := guardStats()
	ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(st.Failures))
	ch <- prometheus.MustNewConstMetric(c.fallbacks, prometheus.CounterValue, float64(st.Fallbacks))
	ch <- prometheus.MustNewConstMetric(c.cacheHits, prometheus.CounterValue, float64(st.CacheHits))
	ch <- prometheus.MustNewConstMetric(c.outOfMemory, prometheus.CounterValue, float64(st.OutOfMemory))
	ch <- prometheus.MustNewConstMetric(c.overloaded, prometheus.CounterValue, float64(st.Overloaded))
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(open))
}
