package httplimit

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// FuzzKeyOf: whatever a client sends in X-Forwarded-For, a custom header,
// Host and its address, every kind of source gives a key without a panic,
// no longer than MaxKeyLength (or the bounded form of a longer key), the
// same every time, and leaves the request as it was. Seeds are in
// testdata/fuzz/FuzzKeyOf/; FuzzClientIP covers the IP strategies alone.
func FuzzKeyOf(f *testing.F) {
	f.Add("203.0.113.7:1234", "1.1.1.1, 2.2.2.2", "k1", "API.Example.com:8443")
	var sources []*Source
	for _, c := range []SourceCriterion{
		{},
		{IPStrategy: mustStrategy(f, 1, nil, 0)},
		{IPStrategy: mustStrategy(f, 3, nil, 56)},
		{IPStrategy: mustStrategy(f, 0, nil, 64)},
		{IPStrategy: mustStrategy(f, 0, []string{"10.0.0.0/8", "::1", "2001:db8::/32"}, 0)},
		{RequestHeaderName: "X-K"},
		{RequestHost: true},
	} {
		s, err := NewSource(c)
		if err != nil {
			f.Fatal(err)
		}
		sources = append(sources, s)
	}
	bounded := len(BoundKey(strings.Repeat("x", MaxKeyLength+1)))
	f.Fuzz(func(t *testing.T, remote, xff, header, host string) {
		r := &http.Request{RemoteAddr: remote, Host: host, Header: http.Header{
			"X-Forwarded-For": strings.Split(xff, "\n"),
			"X-K":             {header},
		}}
		before := r.Header.Clone()
		for i, s := range sources {
			k := KeyOf(s, r)
			if len(k) > MaxKeyLength && len(k) > bounded {
				t.Fatalf("source %d: key of %d bytes", i, len(k))
			}
			if again := KeyOf(s, r); again != k {
				t.Fatalf("source %d: key %q, then %q", i, k, again)
			}
		}
		if !reflect.DeepEqual(r.Header, before) || r.RemoteAddr != remote || r.Host != host {
			t.Fatalf("the request changed: %v, %q, %q", r.Header, r.RemoteAddr, r.Host)
		}
	})
}

func mustStrategy(tb testing.TB, depth int, excluded []string, v6 int) *IPStrategy {
	s, err := NewIPStrategy(depth, excluded, v6)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
