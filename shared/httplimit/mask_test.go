package httplimit

import "testing"

func TestMaskIP(t *testing.T) {
	tests := []struct {
		in             string
		v4Bits, v6Bits int
		want           string
	}{
		{"203.0.113.77", 24, 64, "203.0.113.0/24"},
		{"203.0.113.77", 16, 0, "203.0.0.0/16"},
		{"203.0.113.77", 0, 64, "203.0.113.77"},
		{"203.0.113.77", 32, 64, "203.0.113.77"},
		{"203.0.113.77", 33, 64, "203.0.113.77"},
		{"203.0.113.77", -1, 64, "203.0.113.77"},
		{"2001:db8:1:2:3:4:5:6", 24, 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3:4:5:6", 24, 48, "2001:db8:1::/48"},
		{"2001:db8:1:2:3:4:5:6", 24, 0, "2001:db8:1:2:3:4:5:6"},
		{"2001:db8:1:2:3:4:5:6", 24, 128, "2001:db8:1:2:3:4:5:6"},
		{"fe80::1%eth0", 24, 64, "fe80::/64"},
		{"::ffff:203.0.113.77", 24, 64, "203.0.113.0/24"},
		{"::ffff:203.0.113.77", 0, 64, "203.0.113.77"},
		{"::ffff:203.0.113.77", 32, 128, "203.0.113.77"},
		{"::ffff:203.0.113.77", 0, 0, "203.0.113.77"},
		{"", 24, 64, ""},
		{"not an ip", 24, 64, "not an ip"},
		{"203.0.113.77:80", 24, 64, "203.0.113.77:80"},
		{"日本", 24, 64, "日本"},
	}
	for _, tt := range tests {
		if got := MaskIP(tt.in, tt.v4Bits, tt.v6Bits); got != tt.want {
			t.Errorf("MaskIP(%q, %d, %d) = %q, want %q", tt.in, tt.v4Bits, tt.v6Bits, got, tt.want)
		}
	}
}

func TestValidatePrefixBits(t *testing.T) {
	for _, tt := range []struct {
		bits, max int
		ok        bool
	}{{0, 32, true}, {32, 32, true}, {33, 32, false}, {-1, 128, false}, {128, 128, true}} {
		err := ValidatePrefixBits("ipv4_prefix", tt.bits, tt.max)
		if (err == nil) != tt.ok {
			t.Errorf("ValidatePrefixBits(%d, %d) = %v", tt.bits, tt.max, err)
		}
		if err != nil && err.Error()[:12] != "ipv4_prefix:" {
			t.Errorf("error %q does not name the field", err)
		}
	}
}

func BenchmarkMaskIP(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		MaskIP("2001:db8:1:2:3:4:5:6", 24, 64)
	}
}
