package yaegitest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/traefik/yaegi/interp"
)

// TestPluginFallback runs, interpreted, the requests whose
// sourceCriterion finds nothing: each remote address keeps a count of its
// own (limit 3: client A gets 200 200 200 429, then client B gets 200),
// no header value, X-Forwarded-For entry or host spells the fallback key
// of another client, a CIDR override that would exempt the remote address
// does not when the ipStrategy found nothing, and each middleware says so
// once on the interpreter's standard error, which Traefik logs at error
// level.
func TestPluginFallback(t *testing.T) {
	stderr := &logWriter{}
	b, _ := loadPluginWith(t, interp.Options{Stderr: stderr})
	send := func(h http.Handler, n int, remote, host string, header http.Header) []int {
		var got []int
		for range n {
			r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
			r.RemoteAddr, r.Host = remote, host
			for k, v := range header {
				r.Header[k] = v
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got = append(got, w.Code)
		}
		return got
	}
	const forged = "\x00remote_addr:198.51.100.7" // the fallback key of the clients at 198.51.100.7
	cases := []struct {
		name, host string
		sc         map[string]any
		header     http.Header                // a request whose source finds nothing
		spell      func(v string) http.Header // a request whose key is v
		why        string
	}{
		{"depth-1", "example.com", map[string]any{"ipStrategy": map[string]any{"depth": "1"}}, nil,
			func(v string) http.Header { return http.Header{"X-Forwarded-For": {v}} },
			"ipStrategy.depth 1 found no client address: the request has no X-Forwarded-For"},
		{"depth-2", "example.com", map[string]any{"ipStrategy": map[string]any{"depth": "2"}}, http.Header{"X-Forwarded-For": {"203.0.113.1"}},
			func(v string) http.Header { return http.Header{"X-Forwarded-For": {v + ", 10.0.0.1"}} },
			"ipStrategy.depth 2 found no client address: X-Forwarded-For has fewer entries than the depth"},
		{"excluded", "example.com", map[string]any{"ipStrategy": map[string]any{"excludedIPs": "10.0.0.0/8"}}, http.Header{"X-Forwarded-For": {"10.0.0.1, 10.0.0.2"}},
			func(v string) http.Header { return http.Header{"X-Forwarded-For": {v + ", 10.0.0.1"}} },
			"ipStrategy.excludedIPs found no client address: every X-Forwarded-For entry is excluded or empty"},
		{"header", "example.com", map[string]any{"requestHeaderName": "X-Key"}, nil,
			func(v string) http.Header { return http.Header{"X-Key": {v}} },
			"requestHeaderName found nothing: the request has no X-Key header, or an empty one"},
		{"host", "", map[string]any{"requestHost": "true"}, nil, nil,
			"requestHost found nothing: the request has no host"},
	}
	for _, c := range cases {
		name := "fallback-" + c.name + "@docker"
		h := b.build(t, map[string]any{"window": "1m", "limit": "3", "sourceCriterion": c.sc,
			"overrides": "192.0.2.0/24=unlimited"}, name)
		if got := send(h, 4, "127.0.0.1:40001", c.host, c.header); !slices.Equal(got, []int{200, 200, 200, 429}) {
			t.Errorf("%s: client A: %v, want [200 200 200 429]", c.name, got)
		}
		if got := send(h, 1, "127.0.0.2:40002", c.host, c.header); !slices.Equal(got, []int{200}) {
			t.Errorf("%s: client B after A: %v, want [200]", c.name, got)
		}
		// A CIDR matches the remote address of a request whose ipStrategy
		// found nothing only to lower its limit: the proxy's range is
		// exempt, such a request from it is not. With a header or the
		// host, a CIDR always matches the remote address.
		want := []int{200, 200, 200, 429}
		if _, ip := c.sc["ipStrategy"]; !ip {
			want = []int{200, 200, 200, 200}
		}
		if got := send(h, 4, "192.0.2.1:1", c.host, c.header); !slices.Equal(got, want) {
			t.Errorf("%s: from 192.0.2.1 (exempt range): %v, want %v", c.name, got, want)
		}
		// The forged key uses up only its own count.
		for range 3 {
			if c.spell != nil {
				send(h, 1, "203.0.113.9:1", "example.com", c.spell(forged))
			} else {
				send(h, 1, "203.0.113.9:1", forged, nil)
			}
		}
		if got := send(h, 1, "198.51.100.7:1", c.host, c.header); !slices.Equal(got, []int{200}) {
			t.Errorf("%s: the client at 198.51.100.7 after its fallback key was forged: %v, want [200]", c.name, got)
		}
	}
	// A new instance (a reload) logs once more.
	h := b.build(t, map[string]any{"window": "1m", "limit": "3", "sourceCriterion": cases[0].sc}, "fallback-depth-1@docker")
	send(h, 2, "127.0.0.3:1", "example.com", nil)

	got := stderr.text(t)
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	want := len(cases) + 1
	if len(lines) != want {
		t.Fatalf("standard error: %d lines, want %d (once per middleware instance):\n%s", len(lines), want, got)
	}
	for i, c := range append(cases, cases[0]) {
		prefix := `windowlimit: warning: middleware "fallback-` + c.name + `@docker": sourceCriterion.` + c.why
		if !strings.HasPrefix(lines[i], prefix) || !strings.Contains(lines[i], "counted by their remote address instead") {
			t.Errorf("line %d: %q, want %q ... counted by their remote address instead", i+1, lines[i], prefix)
		}
	}
}
