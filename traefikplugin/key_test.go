package traefikplugin

import (
	"math/rand"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/shared/httplimit"
)

// mustKeySource returns the keySource of sc.
func mustKeySource(tb testing.TB, sc *SourceCriterion) *keySource {
	tb.Helper()
	s, err := newKeySource(sc)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestSourceKey(t *testing.T) {
	long := strings.Repeat("x", httplimit.MaxKeyLength+1)
	tests := []struct {
		name string
		c    *SourceCriterion
		req  *http.Request
		want string
	}{
		{"default is remote addr", nil, &http.Request{RemoteAddr: "203.0.113.7:1", Header: http.Header{"X-Forwarded-For": {"1.1.1.1"}}}, "203.0.113.7"},
		{"empty is remote addr", &SourceCriterion{}, &http.Request{RemoteAddr: "203.0.113.7:1", Header: http.Header{"X-Forwarded-For": {"1.1.1.1"}}}, "203.0.113.7"},
		{"ip strategy", &SourceCriterion{IPStrategy: &IPStrategy{Depth: 1}}, &http.Request{RemoteAddr: "203.0.113.7:1", Header: http.Header{"X-Forwarded-For": {"1.1.1.1"}}}, "1.1.1.1"},
		{"header", &SourceCriterion{RequestHeaderName: "x-api-key"}, &http.Request{Header: http.Header{"X-Api-Key": {"k1", "k2"}}}, "k1"},
		{"header missing", &SourceCriterion{RequestHeaderName: "X-Api-Key"}, &http.Request{RemoteAddr: "203.0.113.7:1", Header: http.Header{}}, fallbackPrefix + "203.0.113.7"},
		{"header empty", &SourceCriterion{RequestHeaderName: "X-Api-Key"}, &http.Request{RemoteAddr: "203.0.113.7:1", Header: http.Header{"X-Api-Key": {"", "k2"}}}, fallbackPrefix + "203.0.113.7"},
		{"header NUL first", &SourceCriterion{RequestHeaderName: "X-User"}, &http.Request{Header: http.Header{"X-User": {"\x00k"}}}, "\x00\x00k"},
		{"header spells the fallback", &SourceCriterion{RequestHeaderName: "X-User"}, &http.Request{Header: http.Header{"X-User": {fallbackPrefix + "203.0.113.7"}}}, "\x00" + fallbackPrefix + "203.0.113.7"},
		{"header NUL first beyond bound", &SourceCriterion{RequestHeaderName: "X-User"}, &http.Request{Header: http.Header{"X-User": {"\x00" + long}}}, httplimit.BoundKey("\x00\x00" + long)},
		{"depth finds nothing", &SourceCriterion{IPStrategy: &IPStrategy{Depth: 2}}, &http.Request{RemoteAddr: "203.0.113.7:1", Header: http.Header{"X-Forwarded-For": {"1.1.1.1"}}}, fallbackPrefix + "203.0.113.7"},
		{"depth finds nothing, IPv6", &SourceCriterion{IPStrategy: &IPStrategy{Depth: 1, IPv6Subnet: 56}}, &http.Request{RemoteAddr: "[2001:db8:1:2::7]:443", Header: http.Header{}}, fallbackPrefix + "2001:db8:1::/56"},
		{"excluded finds nothing", &SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}}, &http.Request{RemoteAddr: "[::ffff:203.0.113.7]:1", Header: http.Header{"X-Forwarded-For": {"10.0.0.1"}}}, fallbackPrefix + "203.0.113.7"},
		{"nothing, long remote address", &SourceCriterion{RequestHeaderName: "X-User"}, &http.Request{RemoteAddr: long + ":80", Header: http.Header{}}, httplimit.BoundKey(fallbackPrefix + long)},
		{"header unicode", &SourceCriterion{RequestHeaderName: "X-User"}, &http.Request{Header: http.Header{"X-User": {"üñí\x00"}}}, "üñí\x00"},
		{"header at bound", &SourceCriterion{RequestHeaderName: "X-User"}, &http.Request{Header: http.Header{"X-User": {long[1:]}}}, long[1:]},
		{"header beyond bound", &SourceCriterion{RequestHeaderName: "X-User"}, &http.Request{Header: http.Header{"X-User": {long}}}, httplimit.BoundKey(long)},
		{"host", &SourceCriterion{RequestHost: true}, &http.Request{Host: "API.Example.com:8443", Header: http.Header{}}, "api.example.com:8443"},
		{"host empty", &SourceCriterion{RequestHost: true}, &http.Request{RemoteAddr: "[2001:db8:1:2::7]:443", Header: http.Header{}}, fallbackPrefix + "2001:db8:1:2::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keyOf(mustKeySource(t, tt.c), tt.req); got != tt.want {
				t.Errorf("keyOf = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestKeyOfForgedBoundForm: a header that is literally the bounded form
// of another client's long key is not that key.
func TestKeyOfForgedBoundForm(t *testing.T) {
	long := strings.Repeat("k", httplimit.MaxKeyLength+1)
	forged := httplimit.BoundKey(long)
	s := mustKeySource(t, &SourceCriterion{RequestHeaderName: "X-Key"})
	key := func(v string) string { return keyOf(s, &http.Request{Header: http.Header{"X-Key": {v}}}) }
	if a, b := key(long), key(forged); a == b {
		t.Errorf("header %q and the %d-byte header share the key %q", forged, len(long), a)
	}
}

func TestNewSourceErrors(t *testing.T) {
	ip := &IPStrategy{}
	tests := []struct {
		c     SourceCriterion
		field string
	}{
		{SourceCriterion{IPStrategy: ip, RequestHost: true}, "sourceCriterion"},
		{SourceCriterion{IPStrategy: ip, RequestHeaderName: "X-A"}, "sourceCriterion"},
		{SourceCriterion{RequestHeaderName: "X-A", RequestHost: true}, "sourceCriterion"},
		{SourceCriterion{RequestHeaderName: "X A"}, "sourceCriterion.requestHeaderName"},
		{SourceCriterion{RequestHeaderName: "X-Ä"}, "sourceCriterion.requestHeaderName"},
		{SourceCriterion{RequestHeaderName: "X:"}, "sourceCriterion.requestHeaderName"},
		// The ipStrategy is checked first, as its errors are more precise.
		{SourceCriterion{IPStrategy: &IPStrategy{Depth: -1}, RequestHost: true}, "sourceCriterion.ipStrategy.depth"},
	}
	for _, tt := range tests {
		_, err := newKeySource(&tt.c)
		if err == nil {
			t.Errorf("newKeySource(%+v) accepted", tt.c)
			continue
		}
		mutual := tt.field == "sourceCriterion"
		if !strings.HasPrefix(err.Error(), tt.field+": ") || mutual != strings.Contains(err.Error(), "mutually exclusive") {
			t.Errorf("newKeySource(%+v) = %v, want an error on %s", tt.c, err, tt.field)
		}
	}
}

// TestSourceRandomInput throws random bytes at every source: no panic, and
// every key is bounded.
func TestSourceRandomInput(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var sources []*keySource
	for _, c := range []*SourceCriterion{nil, {RequestHeaderName: "X-Key"}, {RequestHost: true}} {
		sources = append(sources, mustKeySource(t, c))
	}
	for _, cfg := range [][3]int{{1, 0, 0}, {2, 0, 64}, {0, 1, 48}} {
		var excluded []string
		if cfg[1] == 1 {
			excluded = []string{"10.0.0.0/8", "2001:db8::/32"}
		}
		ip := &IPStrategy{Depth: cfg[0], ExcludedIPs: excluded, IPv6Subnet: cfg[2]}
		sources = append(sources, mustKeySource(t, &SourceCriterion{IPStrategy: ip}))
	}
	alphabet := []byte("0123456789abcdef.:,[]% \t\xff\x00")
	junk := func() string {
		n := rng.Intn(40)
		if rng.Intn(200) == 0 {
			n = 1 << 16
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
	for i := 0; i < 4000; i++ {
		r := &http.Request{RemoteAddr: junk(), Host: junk(), Header: http.Header{
			"X-Forwarded-For": {junk(), junk()},
			"X-Key":           {junk()},
		}}
		for _, s := range sources {
			if k := keyOf(s, r); len(k) > httplimit.MaxKeyLength {
				t.Fatalf("key of %d bytes", len(k))
			}
		}
	}
}

func BenchmarkSourceKey(b *testing.B) {
	s := mustKeySource(b, nil)
	r := &http.Request{RemoteAddr: "203.0.113.7:4711", Header: http.Header{}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		keyOf(s, r)
	}
}

func TestSourceIsRemoteAddr(t *testing.T) {
	tests := []struct {
		c      SourceCriterion
		want   bool
		prefix int
	}{
		{SourceCriterion{}, true, 64},
		{SourceCriterion{IPStrategy: &IPStrategy{}}, true, 64},
		{SourceCriterion{IPStrategy: &IPStrategy{IPv6Subnet: 48}}, true, 48},
		{SourceCriterion{IPStrategy: &IPStrategy{IPv6Subnet: 128}}, true, 128},
		{SourceCriterion{IPStrategy: &IPStrategy{Depth: 1}}, false, 64},
		{SourceCriterion{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}}, false, 64},
		{SourceCriterion{RequestHost: true}, false, 0},
		{SourceCriterion{RequestHeaderName: "X-A"}, false, 0},
	}
	for _, tt := range tests {
		s := mustKeySource(t, &tt.c)
		if got := s.isRemoteAddr(); got != tt.want {
			t.Errorf("%+v: isRemoteAddr = %v, want %v", tt.c, got, tt.want)
		}
		if got := s.ipv6Prefix(); got != tt.prefix {
			t.Errorf("%+v: ipv6Prefix = %d, want %d", tt.c, got, tt.prefix)
		}
	}
}

// FuzzKeyOf: whatever a client sends in X-Forwarded-For, a custom header,
// Host and its address, every kind of source gives a key without a panic,
// no longer than httplimit.MaxKeyLength (or the bounded form of a longer
// key), the same every time, and leaves the request as it was. A source
// that finds nothing gives the fallback key of the remote address; one
// that finds a value gives a key outside the fallback's namespace, so the
// two never meet. Seeds are in testdata/fuzz/FuzzKeyOf/; FuzzClientIP
// covers the IP strategies alone.
func FuzzKeyOf(f *testing.F) {
	f.Add("203.0.113.7:1234", "1.1.1.1, 2.2.2.2", "k1", "API.Example.com:8443")
	f.Add("203.0.113.7:1234", "", "", "")
	f.Add("[2001:db8::1]:443", "\x00remote_addr:203.0.113.7", "\x00remote_addr:203.0.113.7", "\x00remote_addr:2001:db8::/64")
	f.Add("198.51.100.7:1", "\x00\x00", "\x00", "\x00REMOTE_ADDR:x")
	var sources []*keySource
	for _, c := range []*SourceCriterion{
		nil,
		{IPStrategy: &IPStrategy{Depth: 1}},
		{IPStrategy: &IPStrategy{Depth: 3, IPv6Subnet: 56}},
		{IPStrategy: &IPStrategy{IPv6Subnet: 64}},
		{IPStrategy: &IPStrategy{ExcludedIPs: []string{"10.0.0.0/8", "::1", "2001:db8::/32"}}},
		{RequestHeaderName: "X-K"},
		{RequestHost: true},
	} {
		sources = append(sources, mustKeySource(f, c))
	}
	bounded := len(httplimit.BoundKey(strings.Repeat("x", httplimit.MaxKeyLength+1)))
	f.Fuzz(func(t *testing.T, remote, xff, header, host string) {
		r := &http.Request{RemoteAddr: remote, Host: host, Header: http.Header{
			"X-Forwarded-For": strings.Split(xff, "\n"),
			"X-K":             {header},
		}}
		before := r.Header.Clone()
		for i, s := range sources {
			k := keyOf(s, r)
			if len(k) > httplimit.MaxKeyLength && len(k) > bounded {
				t.Fatalf("source %d: key of %d bytes", i, len(k))
			}
			if again := keyOf(s, r); again != k {
				t.Fatalf("source %d: key %q, then %q", i, k, again)
			}
			// What the source found, and the string the key bounds.
			var found string
			switch s.kind {
			case sourceHeader:
				found = header
			case sourceHost:
				found = strings.ToLower(host)
			default:
				found = clientIP(s.ip, r)
			}
			want := found
			switch {
			case found == "":
				v6Bits := httplimit.DefaultIPv6Prefix
				if s.ip != nil {
					v6Bits = s.ip.v6Bits
				}
				want = fallbackPrefix + addrKey(remote, v6Bits)
			case found[0] == 0:
				want = "\x00" + found
			}
			if found != "" && strings.HasPrefix(want, fallbackPrefix) {
				t.Fatalf("source %d: the value %q found is keyed in the fallback's namespace: %q", i, found, want)
			}
			if k != httplimit.BoundKey(want) {
				t.Fatalf("source %d: found %q, key %q, want %q", i, found, k, httplimit.BoundKey(want))
			}
		}
		if !reflect.DeepEqual(r.Header, before) || r.RemoteAddr != remote || r.Host != host {
			t.Fatalf("the request changed: %v, %q, %q", r.Header, r.RemoteAddr, r.Host)
		}
	})
}
