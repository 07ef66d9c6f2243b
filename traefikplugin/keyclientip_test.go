package traefikplugin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/shared/httplimit"
)

// requestFrom returns a request from the remote address remote with the
// X-Forwarded-For lines xff.
func requestFrom(remote string, xff ...string) *http.Request {
	r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
	if xff != nil {
		r.Header["X-Forwarded-For"] = xff
	}
	return r
}

func TestClientIP(t *testing.T) {
	tests := []struct {
		name     string
		depth    int
		excluded []string
		v6       int
		remote   string
		xff      []string
		want     string
	}{
		{name: "remote addr", remote: "203.0.113.7:4711", want: "203.0.113.7"},
		{name: "remote addr ignores xff", remote: "203.0.113.7:4711", xff: []string{"198.51.100.1"}, want: "203.0.113.7"},
		{name: "remote ipv6", v6: 128, remote: "[2001:db8::1]:443", want: "2001:db8::1"},
		{name: "remote ipv6 grouped by /64 by default", remote: "[2001:db8::1]:443", want: "2001:db8::/64"},
		{name: "remote ipv4-mapped is ipv4", remote: "[::ffff:203.0.113.7]:443", want: "203.0.113.7"},
		{name: "remote ipv4-mapped is ipv4 with 128", v6: 128, remote: "[::ffff:203.0.113.7]:443", want: "203.0.113.7"},
		{name: "remote without port", remote: "203.0.113.7", want: "203.0.113.7"},
		{name: "remote empty", remote: "", want: ""},
		{name: "remote ipv6 subnet", v6: 64, remote: "[2001:db8:1:2:3:4:5:6]:443", want: "2001:db8:1:2::/64"},
		{name: "remote ipv4 untouched by ipv6 subnet", v6: 64, remote: "203.0.113.7:1", want: "203.0.113.7"},

		{name: "depth 1 is rightmost", depth: 1, remote: "10.0.0.1:1", xff: []string{"1.1.1.1, 2.2.2.2, 3.3.3.3"}, want: "3.3.3.3"},
		{name: "depth 2", depth: 2, xff: []string{"1.1.1.1, 2.2.2.2, 3.3.3.3"}, want: "2.2.2.2"},
		{name: "depth equal to length", depth: 3, xff: []string{"1.1.1.1,2.2.2.2,3.3.3.3"}, want: "1.1.1.1"},
		{name: "depth beyond length", depth: 4, xff: []string{"1.1.1.1, 2.2.2.2, 3.3.3.3"}, want: ""},
		{name: "depth without header", depth: 1, remote: "10.0.0.1:1", want: ""},
		{name: "depth across lines", depth: 2, xff: []string{"1.1.1.1, 2.2.2.2", "3.3.3.3"}, want: "2.2.2.2"},
		{name: "depth across lines 3", depth: 3, xff: []string{"1.1.1.1, 2.2.2.2", "3.3.3.3"}, want: "1.1.1.1"},
		{name: "depth counts empty entries", depth: 2, xff: []string{"1.1.1.1,,3.3.3.3"}, want: ""},
		{name: "depth junk returned as is", depth: 1, xff: []string{"1.1.1.1, <script>"}, want: "<script>"},
		{name: "depth entry with port", depth: 1, xff: []string{"203.0.113.9:5555"}, want: "203.0.113.9"},
		{name: "depth bracketed ipv6 with port", depth: 1, v6: 128, xff: []string{"[2001:db8::9]:443"}, want: "2001:db8::9"},
		{name: "depth bracketed ipv6", depth: 1, v6: 128, xff: []string{"[2001:db8::9]"}, want: "2001:db8::9"},
		{name: "depth ipv6 subnet", depth: 1, v6: 48, xff: []string{"2001:db8:aa:bb::1"}, want: "2001:db8:aa::/48"},

		{name: "excluded skips trusted", excluded: []string{"10.0.0.0/8"}, xff: []string{"1.1.1.1, 2.2.2.2, 10.0.0.2, 10.1.1.1"}, want: "2.2.2.2"},
		{name: "excluded single address", excluded: []string{"2.2.2.2", "10.0.0.0/8"}, xff: []string{"1.1.1.1, 2.2.2.2, 10.0.0.2"}, want: "1.1.1.1"},
		{name: "excluded all", excluded: []string{"0.0.0.0/0"}, xff: []string{"1.1.1.1, 2.2.2.2"}, want: ""},
		{name: "excluded no header", excluded: []string{"10.0.0.0/8"}, remote: "1.1.1.1:1", want: ""},
		{name: "excluded skips empty entries", excluded: []string{"10.0.0.0/8"}, xff: []string{"1.1.1.1, , 10.0.0.1,"}, want: "1.1.1.1"},
		{name: "excluded junk is the client", excluded: []string{"10.0.0.0/8"}, xff: []string{"1.1.1.1, junk, 10.0.0.1"}, want: "junk"},
		{name: "excluded ipv6 range", v6: 128, excluded: []string{"2001:db8::/32"}, xff: []string{"2001:db9::1, 2001:db8::5"}, want: "2001:db9::1"},
		{name: "excluded mapped address", excluded: []string{"10.0.0.0/8"}, xff: []string{"1.1.1.1, ::ffff:10.0.0.1"}, want: "1.1.1.1"},
		{name: "excluded with port", excluded: []string{"10.0.0.0/8"}, xff: []string{"1.1.1.1:80, 10.0.0.1:80"}, want: "1.1.1.1"},
		{name: "excluded across lines", excluded: []string{"10.0.0.0/8"}, xff: []string{"1.1.1.1", "10.0.0.1"}, want: "1.1.1.1"},
		{name: "excluded with ipv6 subnet", excluded: []string{"10.0.0.0/8"}, v6: 64, xff: []string{"2001:db8:1:2::77, 10.0.0.1"}, want: "2001:db8:1:2::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newIPStrategy(tt.depth, tt.excluded, tt.v6)
			if err != nil {
				t.Fatal(err)
			}
			if got := clientIP(s, requestFrom(tt.remote, tt.xff...)); got != tt.want {
				t.Errorf("clientIP = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClientIPBoundsExcludedHops(t *testing.T) {
	s, err := newIPStrategy(0, []string{"10.0.0.0/8"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	near := "1.1.1.1" + strings.Repeat(", 10.0.0.1", maxForwardedHops-1)
	if got := clientIP(s, requestFrom("", near)); got != "1.1.1.1" {
		t.Errorf("client at hop %d: got %q", maxForwardedHops, got)
	}
	far := "1.1.1.1" + strings.Repeat(", 10.0.0.1", maxForwardedHops)
	if got := clientIP(s, requestFrom("", far)); got != "" {
		t.Errorf("client beyond hop %d: got %q, want \"\"", maxForwardedHops, got)
	}
	commas := "1.1.1.1" + strings.Repeat(",", 100000)
	if got := clientIP(s, requestFrom("", commas)); got != "" {
		t.Errorf("client behind 100000 empty entries: got %q, want \"\"", got)
	}
}

func TestNewIPStrategyErrors(t *testing.T) {
	tests := []struct {
		depth    int
		excluded []string
		v6       int
		field    string
	}{
		{depth: -1, field: "depth"},
		{v6: -1, field: "ipv6Subnet"},
		{v6: 129, field: "ipv6Subnet"},
		{excluded: []string{"10.0.0.0/8", "bogus"}, field: "excludedIPs[1]"},
		{excluded: []string{"10.0.0.0/33"}, field: "excludedIPs[0]"},
		{excluded: []string{""}, field: "excludedIPs[0]"},
		{depth: 1, excluded: []string{"10.0.0.0/8"}, field: "excludedIPs"},
	}
	for _, tt := range tests {
		_, err := newIPStrategy(tt.depth, tt.excluded, tt.v6)
		if err == nil || !strings.HasPrefix(err.Error(), "sourceCriterion.ipStrategy."+tt.field+": ") {
			t.Errorf("newIPStrategy(%d, %q, %d) = %v, want an error on sourceCriterion.ipStrategy.%s", tt.depth, tt.excluded, tt.v6, err, tt.field)
		}
	}
	if _, err := newIPStrategy(2, nil, 128); err != nil {
		t.Errorf("valid strategy: %v", err)
	}
}

// FuzzClientIP feeds arbitrary X-Forwarded-For and remote addresses to
// every strategy: none may panic, and a result is always a trimmed part of
// the input or a canonical address or prefix.
func FuzzClientIP(f *testing.F) {
	for _, s := range []string{"", ",", " , ,", "1.1.1.1, 2.2.2.2", "[::1]:80", "::ffff:1.2.3.4", "fe80::1%eth0", "\xff\xfe", "日本, 本", "1.1.1.1:99999", "[", "]"} {
		f.Add(s, s)
	}
	var strategies []*ipStrategy
	for _, c := range []struct {
		depth    int
		excluded []string
		v6       int
	}{{0, nil, 0}, {0, nil, 64}, {1, nil, 0}, {3, nil, 56}, {0, []string{"10.0.0.0/8", "::1"}, 0}, {0, []string{"0.0.0.0/0"}, 64}} {
		s, err := newIPStrategy(c.depth, c.excluded, c.v6)
		if err != nil {
			f.Fatal(err)
		}
		strategies = append(strategies, s)
	}
	f.Fuzz(func(t *testing.T, remote, xff string) {
		r := requestFrom(remote, xff, xff)
		for _, s := range strategies {
			got := clientIP(s, r)
			if len(got) > len(remote)+len(xff)+64 {
				t.Errorf("clientIP grew the input: %q", got)
			}
			if again := clientIP(s, r); again != got {
				t.Errorf("clientIP %q, then %q", got, again)
			}
		}
	})
}

func BenchmarkClientIP(b *testing.B) {
	cases := []struct {
		name     string
		depth    int
		excluded []string
		v6       int
		xff      string
	}{
		{name: "remote"},
		{name: "remote-ipv6subnet", v6: 64},
		{name: "depth1", depth: 1, xff: "1.1.1.1, 2.2.2.2, 3.3.3.3"},
		{name: "depth2", depth: 2, xff: "1.1.1.1, 2.2.2.2, 3.3.3.3"},
		{name: "excluded", excluded: []string{"10.0.0.0/8", "172.16.0.0/12"}, xff: "1.1.1.1, 2.2.2.2, 10.0.0.1"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s, err := newIPStrategy(c.depth, c.excluded, c.v6)
			if err != nil {
				b.Fatal(err)
			}
			remote := "203.0.113.7:4711"
			if c.v6 > 0 {
				remote = "[2001:db8:1:2:3:4:5:6]:4711"
			}
			r := requestFrom(remote, c.xff)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				clientIP(s, r)
			}
		})
	}
}

func TestAddrKey(t *testing.T) {
	long := "[" + strings.Repeat("a", httplimit.MaxKeyLength) + "]:1"
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
		{"[sha256:x]:1", 64, httplimit.BoundKey("sha256:x")},
		{long, 64, httplimit.BoundKey(long[1 : len(long)-3])},
	}
	for _, tt := range tests {
		if got := addrKey(tt.addr, tt.v6); got != tt.want {
			t.Errorf("addrKey(%q, %d) = %q, want %q", tt.addr, tt.v6, got, tt.want)
		}
	}
}
