package yaegitest

import (
	"math/rand"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The pools random requests are drawn from: plain values and every odd
// one the plugin's memory-path key functions hand to keyOf.
var (
	diffRemotes = []string{"203.0.113.7:1", "203.0.113.8:2", "[2001:db8::1]:443", "[2001:db8::2]:443", "10.0.0.1",
		"[::ffff:10.0.0.3]:5", "junk"}
	diffEntries = []string{"203.0.113.9", " 198.51.100.1 ", "", "10.0.0.2", "192.168.1.1", "2001:db8:1:2::7",
		"[2001:db8::9]:80", "203.0.113.7:4711", "junk", "sha256:abc", "\x00x", strings.Repeat("a", 300), "[1.2.3.4]",
		"::ffff:10.0.0.9"}
	diffKeys  = []string{"", "k1", "K1", "sha256:x", "\x00k", strings.Repeat("k", 300)}
	diffHosts = []string{"example.com", "API.Example.com", "", "sha256:y"}
)

func diffRequest(rng *rand.Rand) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/api", nil)
	r.RemoteAddr = diffRemotes[rng.Intn(len(diffRemotes))]
	r.Host = diffHosts[rng.Intn(len(diffHosts))]
	for l := rng.Intn(3); l > 0; l-- {
		var entries []string
		for e := 1 + rng.Intn(3); e > 0; e-- {
			entries = append(entries, diffEntries[rng.Intn(len(diffEntries))])
		}
		r.Header.Add("X-Forwarded-For", strings.Join(entries, ","))
	}
	if k := rng.Intn(len(diffKeys) + 1); k < len(diffKeys) {
		r.Header["X-Api-Key"] = []string{diffKeys[k]}
	}
	return r
}

// TestPluginPathsMatchServeAny holds the interpreted plugin's memory path
// to serveAny on random requests: each configuration, and the same with
// an override no request matches (which sends every request through
// serveAny with the rule's limit), see the same
// statuses, bodies and headers (the middleware names in the IETF values
// aside). A pair of requests that straddles a second is not compared: a
// delay rounded up to seconds may change between the two.
func TestPluginPathsMatchServeAny(t *testing.T) {
	pb, _ := loadPlugin(t)
	rng := rand.New(rand.NewSource(20))
	sources := map[string]map[string]any{
		"remote":     {},
		"depth 1":    ipStrategy(map[string]any{"depth": "1"}),
		"depth 2":    ipStrategy(map[string]any{"depth": "2"}),
		"excluded":   ipStrategy(map[string]any{"excludedIPs": "10.0.0.0/8, 192.168.0.0/16, 2001:db8:1::/48"}),
		"ipv6Subnet": ipStrategy(map[string]any{"ipv6Subnet": "56"}),
		"header":     {"sourceCriterion": map[string]any{"requestHeaderName": "X-Api-Key"}},
		"host":       {"sourceCriterion": map[string]any{"requestHost": "true"}},
	}
	for name, src := range sources {
		for _, headers := range []string{"legacy", "ietf", "both", "none"} {
			for _, window := range []string{"1m", "87600h"} {
				settings := map[string]any{"window": window, "limit": "2", "headers": headers, "dryRun": rng.Intn(3) == 0}
				for k, v := range src {
					settings[k] = v
				}
				memory := pb.build(t, settings, "diff-memory@file")
				settings["overrides"] = "no-request-has-this-key=5"
				viaAny := pb.build(t, settings, "diff-any@file")
				for i := 0; i < 60; i++ {
					r := diffRequest(rng)
					wa, wb := httptest.NewRecorder(), httptest.NewRecorder()
					start := time.Now().Unix()
					memory.ServeHTTP(wa, r.Clone(r.Context()))
					viaAny.ServeHTTP(wb, r.Clone(r.Context()))
					if time.Now().Unix() != start {
						continue
					}
					ha := wa.Header().Clone()
					for _, v := range ha {
						for j := range v {
							v[j] = strings.ReplaceAll(v[j], `"diff-memory@file"`, `"diff-any@file"`)
						}
					}
					if wa.Code != wb.Code || wa.Body.String() != wb.Body.String() || !reflect.DeepEqual(ha, wb.Header()) {
						t.Fatalf("%s, %s, window %s, request %d (remote %q, host %q, header %q): %d %v, serveAny %d %v",
							name, headers, window, i, r.RemoteAddr, r.Host, r.Header, wa.Code, ha, wb.Code, wb.Header())
					}
				}
			}
		}
	}
}
