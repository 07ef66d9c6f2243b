package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// benchConfig is one configuration Traefik users run, with a request it
// allows; the rows of scripts/bench-traefik.sh.
type benchConfig struct {
	name     string
	settings map[string]any
	remote   string
	header   map[string]string
	host     string
}

// srcConf returns settings of limit 60000 a second with more of them.
func srcConf(more map[string]any) map[string]any {
	s := map[string]any{"window": "1s", "limit": "60000"}
	for k, v := range more {
		s[k] = v
	}
	return s
}

func ipStrategy(v map[string]any) map[string]any {
	return map[string]any{"sourceCriterion": map[string]any{"ipStrategy": v}}
}

// benchConfigs are the configurations Traefik users run most (the rows
// of scripts/bench-traefik.sh), and the ones that may cost more (countStatus, overrides; redis is
// BenchmarkRedisLayersInterpreted's).
var benchConfigs = []benchConfig{
	{name: "default", settings: srcConf(nil)},
	{name: "ipStrategy-depth-1", settings: srcConf(ipStrategy(map[string]any{"depth": "1"})),
		header: map[string]string{"X-Forwarded-For": "198.51.100.1, 203.0.113.7"}},
	{name: "ipStrategy-excludedIPs", settings: srcConf(ipStrategy(map[string]any{"excludedIPs": "10.0.0.0/8, 192.168.0.0/16"})),
		header: map[string]string{"X-Forwarded-For": "203.0.113.7, 10.0.0.2"}},
	{name: "ipStrategy-ipv6Subnet-56", settings: srcConf(ipStrategy(map[string]any{"ipv6Subnet": "56"})),
		remote: "[2001:db8:1:2::7]:4711"},
	{name: "requestHeaderName", settings: srcConf(map[string]any{"sourceCriterion": map[string]any{"requestHeaderName": "X-Api-Key"}}),
		header: map[string]string{"X-Api-Key": "key-0123456789"}},
	{name: "requestHost", settings: srcConf(map[string]any{"sourceCriterion": map[string]any{"requestHost": "true"}}),
		host: "API.example.com"},
	{name: "headers-ietf", settings: srcConf(map[string]any{"headers": "ietf"})},
	{name: "headers-both", settings: srcConf(map[string]any{"headers": "both"})},
	{name: "headers-none", settings: srcConf(map[string]any{"headers": "none"})},
	{name: "limit-100000000", settings: srcConf(map[string]any{"limit": "100000000"})},
	{name: "window-87600h", settings: srcConf(map[string]any{"window": "87600h"})},
	{name: "dryRun", settings: srcConf(map[string]any{"dryRun": "true"})},
	{name: "countStatus", settings: srcConf(map[string]any{"countStatus": "500-599"})},
	{name: "overrides", settings: srcConf(map[string]any{"overrides": "198.51.100.0/24=10, partner=unlimited"})},
	{name: "ban", settings: srcConf(map[string]any{"ban": "1h"})},
	{name: "inFlight", settings: srcConf(map[string]any{"inFlight": "1000"})},
	{name: "inFlight-alone", settings: map[string]any{"inFlight": "1000"}},
}

// request returns a request of c.
func (c benchConfig) request() *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	r.RemoteAddr = "10.0.0.1:4711"
	if c.remote != "" {
		r.RemoteAddr = c.remote
	}
	if c.host != "" {
		r.Host = c.host
	}
	for k, v := range c.header {
		r.Header.Set(k, v)
	}
	return r
}

// BenchmarkPluginConfigs times ServeHTTP under yaegi for each
// configuration of benchConfigs, one client, every request allowed: its
// allocs/op are the interpreter's allocations per request.
func BenchmarkPluginConfigs(b *testing.B) {
	pb, _ := loadPlugin(b)
	for _, c := range benchConfigs {
		b.Run(c.name, func(b *testing.B) {
			h := pb.build(b, c.settings, "bench-"+c.name+"@file")
			r := c.request()
			w := &okWriter{h: http.Header{}}
			h.ServeHTTP(w, r)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(w, r)
			}
			b.StopTimer()
			if w.denied != 0 {
				b.Fatalf("%d of %d requests denied: the benchmark measures admissions", w.denied, b.N+1)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/op")
		})
	}
}
