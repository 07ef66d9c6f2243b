package caddymodule

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/windowlimit/windowlimit/shared/lease"
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
	leaseStats  = newLeaseCollector()
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
	for _, c := range []prometheus.Collector{counters.vec, keysGauge, storeStats, leaseStats, persistStats, inflightGauge, banStats} {
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

// leaseTables holds the lease tables of the loaded configs, by zone name,
// and what the closed ones counted, so the lease metrics, which sum both
// per zone name, never go down across reloads.
var leaseTables = struct {
	sync.Mutex
	live    map[*lease.Table]string
	retired map[string]lease.Stats
}{live: make(map[*lease.Table]string), retired: make(map[string]lease.Stats)}

// trackLeases counts t's leases in the metrics of zone name.
func trackLeases(name string, t *lease.Table) {
	leaseTables.Lock()
	leaseTables.live[t] = name
	leaseTables.Unlock()
}

// retireLeases keeps the counters of t, which was closed, and forgets t.
// (A give-back that a request started just before the close may still
// add to t's counters afterwards: the metrics miss those units.)
func retireLeases(t *lease.Table) {
	leaseTables.Lock()
	defer leaseTables.Unlock()
	name, ok := leaseTables.live[t]
	if !ok {
		return
	}
	delete(leaseTables.live, t)
	leaseTables.retired[name] = addLeaseStats(leaseTables.retired[name], t.Stats())
}

func addLeaseStats(a, b lease.Stats) lease.Stats {
	return lease.Stats{Leases: a.Leases + b.Leases, Granted: a.Granted + b.Granted, Returned: a.Returned + b.Returned, Saved: a.Saved + b.Saved}
}

// leaseStatsByZone sums the counters of every lease table, live and
// closed, by zone name.
func leaseStatsByZone() map[string]lease.Stats {
	leaseTables.Lock()
	defer leaseTables.Unlock()
	byName := make(map[string]lease.Stats, len(leaseTables.retired)+len(leaseTables.live))
	for name, st := range leaseTables.retired {
		byName[name] = st
	}
	for t, name := range leaseTables.live {
		byName[name] = addLeaseStats(byName[name], t.Stats())
	}
	return byName
}

// leaseCollector reports, at scrape time, the lease tables' counters by
// zone name.
type leaseCollector struct {
	leases, granted, returned, admitted *prometheus.Desc
}

func newLeaseCollector() *leaseCollector {
	return &leaseCollector{
		leases: prometheus.NewDesc("caddy_http_rate_limit_lease_grants_total",
			"Redis calls that granted this instance a lease (units counted at once for a hot key), by zone.", []string{"zone"}, nil),
		granted: prometheus.NewDesc("caddy_http_rate_limit_lease_units_granted_total",
			"Units granted to this instance's leases, by zone.", []string{"zone"}, nil),
		returned: prometheus.NewDesc("caddy_http_rate_limit_lease_units_returned_total",
			"Units of this instance's leases given back unspent when they ended, by zone.", []string{"zone"}, nil),
		admitted: prometheus.NewDesc("caddy_http_rate_limit_lease_admitted_total",
			"Requests admitted from a lease without a Redis call (the calls leases saved), by zone.", []string{"zone"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *leaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.leases
	ch <- c.granted
	ch <- c.returned
	ch <- c.admitted
}

// Collect implements prometheus.Collector.
func (c *leaseCollector) Collect(ch chan<- prometheus.Metric) {
	for name, st := range leaseStatsByZone() {
		ch <- prometheus.MustNewConstMetric(c.leases, prometheus.CounterValue, float64(st.Leases), name)
		ch <- prometheus.MustNewConstMetric(c.granted, prometheus.CounterValue, float64(st.Granted), name)
		ch <- prometheus.MustNewConstMetric(c.returned, prometheus.CounterValue, float64(st.Returned), name)
		ch <- prometheus.MustNewConstMetric(c.admitted, prometheus.CounterValue, float64(st.Saved), name)
	}
}
