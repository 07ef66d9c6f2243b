package traefikplugin

import (
	"math/rand"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// toServeAny is an override no request of these tests matches: it sends
// a middleware to serveAny (serveOverridden, decided, deny) with
// the decisions and headers of the rule.
const toServeAny = "no-request-has-this-key=5"

// The pools random requests are drawn from: plain values and every odd
// one the key functions hand to keyOf.
var (
	diffRemotes = []string{"203.0.113.7:1", "203.0.113.8:2", "[2001:db8::1]:443", "[2001:db8::2]:443", "10.0.0.1",
		"[::ffff:10.0.0.3]:5", "junk", "[2001:db8::5]"}
	diffEntries = []string{"203.0.113.9", " 198.51.100.1 ", "", "10.0.0.2", "192.168.1.1", "2001:db8:1:2::7",
		"[2001:db8::9]:80", "203.0.113.7:4711", "junk", "sha256:abc", "\x00x", strings.Repeat("a", 300), "[1.2.3.4]",
		"::ffff:10.0.0.9", "1.2.3.04", "\u00a0203.0.113.9"}
	diffKeys  = []string{"", "k1", "K1", "sha256:x", "\x00k", strings.Repeat("k", 300), "203.0.113.7"}
	diffHosts = []string{"example.com", "API.Example.com", "", strings.Repeat("h", 300) + ".com", "sha256:y"}
)

// diffSources are the sourceCriterions of the differential.
var diffSources = map[string]*SourceCriterion{
	"remote":      nil,
	"depth 1":     {IPStrategy: &IPStrategy{Depth: 1}},
	"depth 2":     {IPStrategy: &IPStrategy{Depth: 2}},
	"excluded":    {IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8", "192.168.0.0/16", "2001:db8:1::/48"}}},
	"ipv6Subnet":  {IPStrategy: &IPStrategy{IPv6Subnet: 56}},
	"header":      {RequestHeaderName: "X-Api-Key"},
	"host":        {RequestHost: true},
	"excluded v6": {IPStrategy: &IPStrategy{ExcludedIPs: []string{"2001:db8::/32"}, IPv6Subnet: 128}},
}

// randomRequest returns a request drawn from the pools.
func randomRequest(rng *rand.Rand) *http.Request {
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

// TestMemoryPathMatchesServeAny holds the memory path to serveAny on
// random requests: for every source, header mode, a limit within and past
// the tables, and dry run, the same statuses, bodies and headers.
func TestMemoryPathMatchesServeAny(t *testing.T) {
	rng := rand.New(rand.NewSource(20))
	for name, sc := range diffSources {
		for _, headers := range []string{"legacy", "ietf", "both", "none"} {
			for _, pastTable := range []bool{false, true} {
				dry := rng.Intn(3) == 0
				t.Run(name+"/"+headers, func(t *testing.T) {
					c := validConfig()
					c.Limit, c.Headers, c.DryRun, c.SourceCriterion = 2, headers, dry, sc
					if pastTable {
						c.Window = "87600h"
					}
					memory := newMiddleware(t, c, "diff-memory@file")
					g := *c
					g.Overrides = []string{toServeAny}
					viaAny := newMiddleware(t, &g, "diff-any@file")
					if middlewareOf(memory).path >= pathRedis || middlewareOf(viaAny).path < pathRedis {
						t.Fatal("the test does not compare the memory path with serveAny")
					}
					compareOnTrace(t, rng, memory, viaAny, 300)
				})
			}
		}
	}
}

// compareOnTrace serves n random requests through a and b and fails on
// any difference of status, body or header (the middleware names in the
// IETF values aside). A request pair that straddles a second is not
// compared: a delay rounded up to seconds may change between the two.
func compareOnTrace(t *testing.T, rng *rand.Rand, a, b http.Handler, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		r := randomRequest(rng)
		wa, wb := httptest.NewRecorder(), httptest.NewRecorder()
		start := time.Now().Unix()
		a.ServeHTTP(wa, r.Clone(r.Context()))
		b.ServeHTTP(wb, r.Clone(r.Context()))
		if time.Now().Unix() != start {
			continue
		}
		ha := wa.Header().Clone()
		for k, v := range ha {
			for j := range v {
				v[j] = strings.ReplaceAll(v[j], `"diff-memory@file"`, `"diff-any@file"`)
			}
			ha[k] = v
		}
		if wa.Code != wb.Code || wa.Body.String() != wb.Body.String() || !reflect.DeepEqual(ha, wb.Header()) {
			t.Fatalf("request %d (remote %q, host %q, header %q): %d %q %v, serveAny %d %q %v", i, r.RemoteAddr, r.Host, r.Header,
				wa.Code, wa.Body, ha, wb.Code, wb.Body, wb.Header())
		}
	}
}

// TestSourceKeyMatchesKeyOf holds sourceKey to keyOf, and ServeHTTP's
// remote address to addrKey, on random requests.
func TestSourceKeyMatchesKeyOf(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for name, sc := range diffSources {
		c := validConfig()
		c.SourceCriterion = sc
		m := middlewareOf(newMiddleware(t, c, "keys@file"))
		for i := 0; i < 2000; i++ {
			r := randomRequest(rng)
			var got, want string
			if m.source == nil {
				got, want = remoteKey(m, r), addrKey(r.RemoteAddr, m.v6Bits)
				if !strings.HasPrefix(r.RemoteAddr, "[") && strings.Contains(r.RemoteAddr, ":") {
					continue // ServeHTTP's inline case: SplitHostPort's host
				}
			} else {
				got, want = sourceKey(m, r), keyOf(m.source, r)
			}
			if got != want {
				t.Fatalf("%s: request (remote %q, host %q, header %q): key %q, keyOf %q", name, r.RemoteAddr, r.Host, r.Header, got, want)
			}
		}
		forget("keys@file")
	}
}
