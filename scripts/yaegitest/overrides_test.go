package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestPluginOverrides runs overrides interpreted, given as a label: a
// CIDR matches the client's address, never the key it sends, an IPv6
// client by its own address rather than its /64, and with ipStrategy
// depth the address the strategy picks.
func TestPluginOverrides(t *testing.T) {
	b, _ := loadPlugin(t)
	statuses := func(h http.Handler, n int, remote, header, value string) []int {
		var got []int
		for range n {
			r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			r.RemoteAddr = remote
			if header != "" {
				r.Header.Set(header, value)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got = append(got, w.Code)
		}
		return got
	}
	limited, exempt := []int{200, 200, 429}, []int{200, 200, 200}

	h := b.build(t, map[string]any{"window": "1m", "limit": "2",
		"sourceCriterion": map[string]any{"requestHeaderName": "X-API-Key"},
		"overrides":       "gold-key=600,10.0.0.0/8=unlimited,::1=unlimited"}, "overrides-key@docker")
	for _, key := range []string{"10.0.0.1", "::ffff:10.9.9.9", "10.0.0.0/8", "::1"} {
		if got := statuses(h, 3, "127.0.0.1:1", "X-API-Key", key); !slices.Equal(got, limited) {
			t.Errorf("client 127.0.0.1 with the key %q: %v, want %v", key, got, limited)
		}
	}
	for _, remote := range []string{"10.1.2.3:1", "[::ffff:10.9.9.9]:1", "[::1]:1"} {
		if got := statuses(h, 3, remote, "X-API-Key", "any-key"); !slices.Equal(got, exempt) {
			t.Errorf("client %s with a key: %v, want %v", remote, got, exempt)
		}
	}

	h = b.build(t, map[string]any{"window": "1m", "limit": "2",
		"sourceCriterion": map[string]any{"ipStrategy": map[string]any{"depth": "1"}},
		"overrides":       "10.0.0.0/8=unlimited,2001:db8::1=unlimited"}, "overrides-depth@docker")
	for _, c := range []struct {
		xff  string
		want []int
	}{
		{"203.0.113.9, 10.1.2.3", exempt},
		{"2001:db8::1", exempt},
		{"10.1.2.3, 203.0.113.9", limited},
		{"2001:db8::2", limited},
	} {
		if got := statuses(h, 3, "10.0.0.5:1", "X-Forwarded-For", c.xff); !slices.Equal(got, c.want) {
			t.Errorf("depth 1, X-Forwarded-For %q: %v, want %v", c.xff, got, c.want)
		}
	}
}
