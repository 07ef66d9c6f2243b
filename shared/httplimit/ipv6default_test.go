package httplimit

import (
	"net/http"
	"strings"
	"testing"
)

// TestIPv6GroupedByDefault: a client-IP key groups IPv6 by /64 unless told
// otherwise; 128 keeps addresses apart; IPv4 is never grouped by default;
// an IPv4-mapped address is its IPv4 address.
func TestIPv6GroupedByDefault(t *testing.T) {
	byDepth := func(v6 int) SourceCriterion {
		ip, err := NewIPStrategy(1, nil, v6)
		if err != nil {
			t.Fatal(err)
		}
		return SourceCriterion{IPStrategy: ip}
	}
	remote := func(v6 int) SourceCriterion {
		ip, err := NewIPStrategy(0, nil, v6)
		if err != nil {
			t.Fatal(err)
		}
		return SourceCriterion{IPStrategy: ip}
	}
	tests := []struct {
		name   string
		c      SourceCriterion
		a, b   string // two clients
		shared bool   // whether they share a key
	}{
		{"default: one /64", SourceCriterion{}, "2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
		{"default: two /64s", SourceCriterion{}, "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"default: IPv4 apart", SourceCriterion{}, "203.0.113.7", "203.0.113.8", false},
		{"default: mapped is IPv4", SourceCriterion{}, "::ffff:203.0.113.7", "203.0.113.7", true},
		{"default: mapped apart", SourceCriterion{}, "::ffff:203.0.113.7", "::ffff:203.0.113.8", false},
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
			s, err := NewSource(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			key := func(ip string) string {
				host := ip
				if strings.Contains(ip, ":") {
					host = "[" + ip + "]"
				}
				return KeyOf(s, &http.Request{RemoteAddr: host + ":4711", Header: http.Header{"X-Forwarded-For": {ip}}})
			}
			ka, kb := key(tt.a), key(tt.b)
			if (ka == kb) != tt.shared {
				t.Errorf("keys %q and %q: shared %v, want %v", ka, kb, ka == kb, tt.shared)
			}
		})
	}
}

func TestRemoteKey(t *testing.T) {
	long := "[" + strings.Repeat("a", MaxKeyLength) + "]:1"
	tests := []struct {
		addr string
		v6   int
		want string
	}{
		{"203.0.113.7:4711", 64, "203.0.113.7"},
		{"203.0.113.7", 64, "203.0.113.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", 64, "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:3:4:5:6]:443", 48, "2001:db8:1::/48"},
		{"[2001:db8:1:2:3:4:5:6]:443", 128, "2001:db8:1:2:3:4:5:6"},
		{"2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64"}, // no port
		{"[fe80::1%eth0]:443", 64, "fe80::/64"},
		{"[::ffff:203.0.113.7]:443", 64, "203.0.113.7"},
		{"[::ffff:203.0.113.7]:443", 128, "203.0.113.7"},
		{"", 64, ""},
		{"[junk:x]:1", 64, "junk:x"},
		{"[sha256:x]:1", 64, BoundKey("sha256:x")},
		{long, 64, BoundKey(long[1 : len(long)-3])},
	}
	for _, tt := range tests {
		if got := RemoteKey(tt.addr, tt.v6); got != tt.want {
			t.Errorf("RemoteKey(%q, %d) = %q, want %q", tt.addr, tt.v6, got, tt.want)
		}
	}
}
