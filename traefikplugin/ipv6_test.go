package traefikplugin

import (
	"net/http"
	"strings"
	"testing"
)

// TestIPv6GroupedByDefault: with the remote address as the key, two IPv6
// addresses of one /64 share a count unless ipv6Subnet is 128; IPv4 is
// unaffected; an IPv4-mapped address is its IPv4 address. Legacy headers
// (written inline) and ietf headers (memoryHeadersPath) are checked.
func TestIPv6GroupedByDefault(t *testing.T) {
	type step struct {
		remote string
		want   int
	}
	grouped := []step{
		{"[2001:db8:1:2::1]:4711", 200},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:4712", 429}, // same /64
		{"[2001:db8:1:3::1]:4711", 200},                  // next /64
		{"2001:db8:1:4::1", 200},                         // no port
		{"2001:db8:1:4::2", 429},
	}
	apart := []step{
		{"[2001:db8:1:2::1]:4711", 200},
		{"[2001:db8:1:2::2]:4711", 200},
		{"[2001:db8:1:2::1]:4712", 429},
	}
	ipv4 := []step{
		{"203.0.113.7:4711", 200},
		{"203.0.113.8:4711", 200}, // not grouped
		{"[::ffff:203.0.113.7]:4711", 429},
		{"[::ffff:203.0.113.9]:4711", 200}, // mapped addresses are not one /64
		{"203.0.113.9:4712", 429},
	}
	tests := []struct {
		name  string
		sc    *SourceCriterion
		steps []step
	}{
		{"default", nil, grouped},
		{"ipStrategy without subnet", &SourceCriterion{IPStrategy: &IPStrategy{}}, grouped},
		{"ipv6Subnet 64", &SourceCriterion{IPStrategy: &IPStrategy{IPv6Subnet: 64}}, grouped},
		{"ipv6Subnet 128", &SourceCriterion{IPStrategy: &IPStrategy{IPv6Subnet: 128}}, apart},
		{"ipv4 default", nil, ipv4},
		{"ipv4 with ipv6Subnet 128", &SourceCriterion{IPStrategy: &IPStrategy{IPv6Subnet: 128}}, ipv4},
	}
	for _, tt := range tests {
		for _, headers := range []string{"legacy", "ietf"} {
			t.Run(tt.name+"/"+headers, func(t *testing.T) {
				c := validConfig()
				c.Limit = 1
				c.Headers = headers
				c.SourceCriterion = tt.sc
				h := newMiddleware(t, c, "ipv6@file")
				if m := middlewareOf(h); m.path >= pathRedis || (m.path == pathMemory) != (headers == "legacy") || m.source != nil {
					t.Fatalf("path %v, source %v: want the remote address, inline, legacy headers from the table", m.path, m.source)
				}
				for i, s := range tt.steps {
					if w := serve(h, s.remote, nil); w.Code != s.want {
						t.Errorf("request %d from %s: %d, want %d", i+1, s.remote, w.Code, s.want)
					}
				}
			})
		}
	}
}

// TestIPv6GroupedByDefaultBehindProxies: the default applies to the
// address an ipStrategy takes from X-Forwarded-For too.
func TestIPv6GroupedByDefaultBehindProxies(t *testing.T) {
	for _, tt := range []struct {
		subnet int
		want   int
	}{{0, 429}, {128, 200}} {
		c := validConfig()
		c.Limit = 1
		c.SourceCriterion = &SourceCriterion{IPStrategy: &IPStrategy{Depth: 1, IPv6Subnet: tt.subnet}}
		h := newMiddleware(t, c, "ipv6xff@file")
		serve(h, "10.0.0.1:1", map[string][]string{"X-Forwarded-For": {"2001:db8:1:2::1"}})
		if w := serve(h, "10.0.0.1:1", map[string][]string{"X-Forwarded-For": {"2001:db8:1:2::2"}}); w.Code != tt.want {
			t.Errorf("ipv6Subnet %d: second address of the /64: %d, want %d", tt.subnet, w.Code, tt.want)
		}
	}
}

// TestIPv6GroupedByDefaultKeyOf: a client-IP key groups IPv6 by /64
// unless told otherwise; 128 keeps addresses apart; IPv4 is never grouped
// by default; an IPv4-mapped address is its IPv4 address.
func TestIPv6GroupedByDefaultKeyOf(t *testing.T) {
	byDepth := func(v6 int) *SourceCriterion {
		return &SourceCriterion{IPStrategy: &IPStrategy{Depth: 1, IPv6Subnet: v6}}
	}
	remote := func(v6 int) *SourceCriterion {
		return &SourceCriterion{IPStrategy: &IPStrategy{IPv6Subnet: v6}}
	}
	tests := []struct {
		name   string
		c      *SourceCriterion
		a, b   string // two clients
		shared bool   // whether they share a key
	}{
		{"default: one /64", nil, "2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
		{"default: two /64s", nil, "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"default: IPv4 apart", nil, "203.0.113.7", "203.0.113.8", false},
		{"default: mapped is IPv4", nil, "::ffff:203.0.113.7", "203.0.113.7", true},
		{"default: mapped apart", nil, "::ffff:203.0.113.7", "::ffff:203.0.113.8", false},
		{"ipv6Subnet 0 is the default", remote(0), "2001:db8:1:2::1", "2001:db8:1:2::2", true},
		{"ipv6Subnet 128 keeps apart", remote(128), "2001:db8:1:2::1", "2001:db8:1:2::2", false},
		{"ipv6Subnet 128, mapped is IPv4", remote(128), "::ffff:203.0.113.7", "203.0.113.7", true},
		{"ipv6Subnet 48", remote(48), "2001:db8:1:2::1", "2001:db8:1:ff::1", true},
		{"depth: one /64", byDepth(0), "2001:db8:1:2::1", "2001:db8:1:2::2", true},
		{"depth 128 keeps apart", byDepth(128), "2001:db8:1:2::1", "2001:db8:1:2::2", false},
		{"depth: mapped apart", byDepth(0), "::ffff:10.0.0.1", "::ffff:10.0.0.2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustKeySource(t, tt.c)
			key := func(ip string) string {
				host := ip
				if strings.Contains(ip, ":") {
					host = "[" + ip + "]"
				}
				return keyOf(s, &http.Request{RemoteAddr: host + ":4711", Header: http.Header{"X-Forwarded-For": {ip}}})
			}
			ka, kb := key(tt.a), key(tt.b)
			if (ka == kb) != tt.shared {
				t.Errorf("keys %q and %q: shared %v, want %v", ka, kb, ka == kb, tt.shared)
			}
		})
	}
}
