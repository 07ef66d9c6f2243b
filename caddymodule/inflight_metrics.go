package caddymodule

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/windowlimit/windowlimit/shared/inflight"
)

// inflightGauge reports, at scrape time, how many in-flight slots this
// instance's requests hold, by zone (never by key).
var inflightGauge = &inflightCollector{desc: prometheus.NewDesc(
	"caddy_http_rate_limit_in_flight",
	"Requests holding an in_flight slot on this instance now, by zone.",
	[]string{"zone"}, nil,
)}

type inflightCollector struct{ desc *prometheus.Desc }

// Describe implements prometheus.Collector.
func (c *inflightCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *inflightCollector) Collect(ch chan<- prometheus.Metric) {
	byName := make(map[string]int64)
	liveLimiters(func(zone string, l *inflight.Limiter) { byName[zone] += l.Held() })
	for name, n := range byName {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), name)
	}
}
