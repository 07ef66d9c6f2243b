package httplimit

import (
	"errors"
	"math/rand"
	"net/http"
	"strings"
	"testing"
)

func TestSourceKey(t *testing.T) {
	depth1, err := NewIPStrategy(1, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", MaxKeyLength+1)
	tests := []struct {
		name string
		c    SourceCriterion
		req  *http.Request
		want string
	}{
		{"default is remote addr", SourceCriterion{}, &http.Request{RemoteAddr: "203.0.113.7:1", Header: http.Header{"X-Forwarded-For": {"1.1.1.1"}}}, "203.0.113.7"},
		{"ip strategy", SourceCriterion{IPStrategy: depth1}, &http.Request{RemoteAddr: "203.0.113.7:1", Header: http.Header{"X-Forwarded-For": {"1.1.1.1"}}}, "1.1.1.1"},
		{"header", SourceCriterion{RequestHeaderName: "x-api-key"}, &http.Request{Header: http.Header{"X-Api-Key": {"k1", "k2"}}}, "k1"},
		{"header missing", SourceCriterion{RequestHeaderName: "X-Api-Key"}, &http.Request{RemoteAddr: "203.0.113.7:1", Header: http.Header{}}, ""},
		{"header unicode", SourceCriterion{RequestHeaderName: "X-User"}, &http.Request{Header: http.Header{"X-User": {"üñí\x00"}}}, "üñí\x00"},
		{"header at bound", SourceCriterion{RequestHeaderName: "X-User"}, &http.Request{Header: http.Header{"X-User": {long[1:]}}}, long[1:]},
		{"header beyond bound", SourceCriterion{RequestHeaderName: "X-User"}, &http.Request{Header: http.Header{"X-User": {long}}}, BoundKey(long)},
		{"host", SourceCriterion{RequestHost: true}, &http.Request{Host: "API.Example.com:8443", Header: http.Header{}}, "api.example.com:8443"},
		{"host empty", SourceCriterion{RequestHost: true}, &http.Request{Header: http.Header{}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSource(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if got := KeyOf(s, tt.req); got != tt.want {
				t.Errorf("Key = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBoundKey(t *testing.T) {
	a := strings.Repeat("a", 10000)
	b := strings.Repeat("a", 9999) + "b"
	ka, kb := BoundKey(a), BoundKey(b)
	if len(ka) > MaxKeyLength || !strings.HasPrefix(ka, "sha256:") {
		t.Errorf("BoundKey of a long key = %q", ka)
	}
	if ka == kb {
		t.Error("two long keys that differ share a bounded key")
	}
	if BoundKey(a) != ka {
		t.Error("BoundKey is not deterministic")
	}
}

func TestNewSourceErrors(t *testing.T) {
	ip := &IPStrategy{}
	tests := []struct {
		c     SourceCriterion
		field string // "" for the mutual-exclusion error
	}{
		{SourceCriterion{IPStrategy: ip, RequestHost: true}, ""},
		{SourceCriterion{IPStrategy: ip, RequestHeaderName: "X-A"}, ""},
		{SourceCriterion{RequestHeaderName: "X-A", RequestHost: true}, ""},
		{SourceCriterion{RequestHeaderName: "X A"}, "requestHeaderName"},
		{SourceCriterion{RequestHeaderName: "X-Ä"}, "requestHeaderName"},
		{SourceCriterion{RequestHeaderName: "X:"}, "requestHeaderName"},
	}
	for _, tt := range tests {
		_, err := NewSource(tt.c)
		if err == nil {
			t.Errorf("NewSource(%+v) accepted", tt.c)
			continue
		}
		var fe *FieldError
		if tt.field == "" && !strings.Contains(err.Error(), "mutually exclusive") || tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field) {
			t.Errorf("NewSource(%+v) = %v, want an error on %q", tt.c, err, tt.field)
		}
	}
}

// TestSourceRandomInput throws random bytes at every source: no panic, and
// every key is bounded.
func TestSourceRandomInput(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var sources []*Source
	for _, c := range []SourceCriterion{{}, {RequestHeaderName: "X-Key"}, {RequestHost: true}} {
		s, err := NewSource(c)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, s)
	}
	for _, cfg := range [][3]int{{1, 0, 0}, {2, 0, 64}, {0, 1, 48}} {
		var excluded []string
		if cfg[1] == 1 {
			excluded = []string{"10.0.0.0/8", "2001:db8::/32"}
		}
		ip, err := NewIPStrategy(cfg[0], excluded, cfg[2])
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSource(SourceCriterion{IPStrategy: ip})
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, s)
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
			if k := KeyOf(s, r); len(k) > MaxKeyLength {
				t.Fatalf("key of %d bytes", len(k))
			}
		}
	}
}

func BenchmarkSourceKey(b *testing.B) {
	s, err := NewSource(SourceCriterion{})
	if err != nil {
		b.Fatal(err)
	}
	r := &http.Request{RemoteAddr: "203.0.113.7:4711", Header: http.Header{}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		KeyOf(s, r)
	}
}

func TestSourceIsRemoteAddr(t *testing.T) {
	depth, _ := NewIPStrategy(1, nil, 0)
	subnet, _ := NewIPStrategy(0, nil, 48)
	apart, _ := NewIPStrategy(0, nil, 128)
	plain, _ := NewIPStrategy(0, nil, 0)
	excluded, _ := NewIPStrategy(0, []string{"10.0.0.0/8"}, 0)
	tests := []struct {
		c      SourceCriterion
		want   bool
		prefix int
	}{
		{SourceCriterion{}, true, 64},
		{SourceCriterion{IPStrategy: plain}, true, 64},
		{SourceCriterion{IPStrategy: subnet}, true, 48},
		{SourceCriterion{IPStrategy: apart}, true, 128},
		{SourceCriterion{IPStrategy: depth}, false, 64},
		{SourceCriterion{IPStrategy: excluded}, false, 64},
		{SourceCriterion{RequestHost: true}, false, 0},
		{SourceCriterion{RequestHeaderName: "X-A"}, false, 0},
	}
	for _, tt := range tests {
		s, err := NewSource(tt.c)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.IsRemoteAddr(); got != tt.want {
			t.Errorf("%+v: IsRemoteAddr = %v, want %v", tt.c, got, tt.want)
		}
		if got := s.IPv6Prefix(); got != tt.prefix {
			t.Errorf("%+v: IPv6Prefix = %d, want %d", tt.c, got, tt.prefix)
		}
	}
}
