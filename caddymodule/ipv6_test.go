package caddymodule

import (
	"testing"
)

// TestIPv6GroupedByDefault: a key that is an IPv6 address is grouped by /64
// unless ipv6_prefix says otherwise (128 keeps addresses apart); IPv4 is
// not grouped by default; an IPv4-mapped address is its IPv4 address.
func TestIPv6GroupedByDefault(t *testing.T) {
	type step struct {
		ip, header string // client IP, X-Key
		want       int
	}
	grouped := []step{
		{"2001:db8:1:2::1", "", 200},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "", 429}, // same /64
		{"2001:db8:1:3::1", "", 200},                  // next /64
	}
	apart := []step{
		{"2001:db8:1:2::1", "", 200},
		{"2001:db8:1:2::2", "", 200},
		{"2001:db8:1:2::1", "", 429},
	}
	ipv4 := []step{
		{"203.0.113.7", "", 200},
		{"203.0.113.8", "", 200}, // not grouped
		{"::ffff:203.0.113.7", "", 429},
		{"::ffff:203.0.113.9", "", 200}, // mapped addresses are not one /64
		{"203.0.113.9", "", 429},
	}
	header := []step{
		{"203.0.113.1", "2001:db8:1:2::1", 200},
		{"203.0.113.2", "2001:db8:1:2::2", 429}, // a placeholder's IPv6 address is grouped
		{"203.0.113.3", "abc:def", 200},
		{"2001:db8:9:9::1", "", 200},
		{"2001:db8:9:9::2", "", 429},            // so is the client IP an empty key falls back to
		{"203.0.113.4", "2001:db8:9:9::3", 200}, // apart from the fallback
	}
	const (
		ipKey     = `{"window":"1m","limit":1`
		headerKey = `{"key":"{http.request.header.X-Key}","window":"1m","limit":1`
	)
	tests := []struct {
		name, zone string
		steps      []step
	}{
		{"default", ipKey + `}`, grouped},
		{"ipv6_prefix 0 is the default", ipKey + `,"ipv6_prefix":0}`, grouped},
		{"ipv6_prefix 128", ipKey + `,"ipv6_prefix":128}`, apart},
		{"ipv4 default", ipKey + `}`, ipv4},
		{"ipv4 with ipv6_prefix 128", ipKey + `,"ipv6_prefix":128}`, ipv4},
		{"ipv4_prefix 32", ipKey + `,"ipv4_prefix":32}`, ipv4},
		{"header", headerKey + `}`, header},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newHandler(t, `{"rate_limits":{"z":`+tt.zone+`}}`)
			for i, s := range tt.steps {
				var hdr []string
				if s.header != "" {
					hdr = []string{"X-Key", s.header}
				}
				if got := serve(t, h, s.ip, "/", hdr...).status; got != s.want {
					t.Errorf("request %d from %s (X-Key %q): %d, want %d", i+1, s.ip, s.header, got, s.want)
				}
			}
		})
	}
}
