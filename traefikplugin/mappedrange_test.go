package traefikplugin

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestClientIPExcludedMappedRange: an excluded range written in IPv4-mapped form
// excludes its IPv4 addresses, written either way, as Traefik does.
func TestClientIPExcludedMappedRange(t *testing.T) {
	for _, r := range []string{"::ffff:10.0.0.0/104", "::ffff:a00:0/104", "::ffff:10.1.2.3/104"} {
		s, err := newIPStrategy(0, []string{r}, 0)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		for _, xff := range []string{"1.1.1.1, 10.0.0.1", "1.1.1.1, ::ffff:10.0.0.1", "1.1.1.1, 10.255.255.255, ::ffff:10.9.9.9"} {
			if got := clientIP(s, requestFrom("", xff)); got != "1.1.1.1" {
				t.Errorf("excluded %s, X-Forwarded-For %q: client %q, want 1.1.1.1", r, xff, got)
			}
		}
		if got := clientIP(s, requestFrom("", "1.1.1.1, 11.0.0.1")); got != "11.0.0.1" {
			t.Errorf("excluded %s: 11.0.0.1 is excluded too", r)
		}
	}
	s, err := newIPStrategy(0, []string{"::ffff:0:0/96"}, 128)
	if err != nil {
		t.Fatal(err)
	}
	if got := clientIP(s, requestFrom("", "2001:db8::1, 1.1.1.1, ::ffff:10.0.0.1")); got != "2001:db8::1" {
		t.Errorf("::ffff:0:0/96 excludes every IPv4 address: client %q, want 2001:db8::1", got)
	}
}

// TestExcludedMappedRangeTooShort: a mapped range shorter than /96 would
// reach beyond the IPv4 addresses it names, and is an error.
func TestExcludedMappedRangeTooShort(t *testing.T) {
	for _, r := range []string{"::ffff:10.0.0.0/95", "::ffff:0:0/80", "::ffff:10.0.0.0/0"} {
		_, err := newIPStrategy(0, []string{"10.0.0.0/8", r}, 0)
		if err == nil || !strings.HasPrefix(err.Error(), "sourceCriterion.ipStrategy.excludedIPs[1]: ") || !strings.Contains(err.Error(), "/96") {
			t.Errorf("excluded %s: %v, want an error on sourceCriterion.ipStrategy.excludedIPs[1] that names /96", r, err)
		}
	}
}

// TestMappedHopNeverExempt: the chain that exempted every client behind
// Caddy (a proxy hop written IPv4-mapped, ::ffff:10.0.0.3, with
// 10.0.0.0/8 exempt) exempts nobody here. excludedIPs skips the hop in
// either form, whichever form the range is written in, and the client in
// front of it is limited; when every entry is excluded, the remote
// address (a proxy in the exempt range) does not exempt the request;
// depth counts entries whatever their form, and an appending proxy that
// writes its client IPv4-mapped gives that client's IPv4 address.
func TestMappedHopNeverExempt(t *testing.T) {
	xff := func(v string) http.Header { return http.Header{"X-Forwarded-For": {v}} }
	for i, c := range []struct {
		name           string
		ip             IPStrategy
		remote, header string
		limit          string // "" for exempt
	}{
		{"excluded range, mapped hop", IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}, "127.0.0.1:1", "203.0.113.7, ::ffff:10.0.0.3", "2"},
		{"mapped excluded range, plain hop", IPStrategy{ExcludedIPs: []string{"::ffff:10.0.0.0/104"}}, "127.0.0.1:1", "203.0.113.7, 10.0.0.3", "2"},
		{"excluded range, mapped hop with a port", IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}, "127.0.0.1:1", "203.0.113.7, [::ffff:10.0.0.3]:443", "2"},
		{"every entry excluded, from the exempt range", IPStrategy{ExcludedIPs: []string{"10.0.0.0/8"}}, "10.0.0.9:1", "::ffff:10.0.0.3", "2"},
		{"depth 1 behind an appending proxy that writes its client mapped", IPStrategy{Depth: 1}, "10.0.0.9:1", "::ffff:203.0.113.7", "2"},
		{"depth 2, the mapped hop nearest", IPStrategy{Depth: 2}, "10.0.0.9:1", "203.0.113.7, ::ffff:10.0.0.3", "2"},
		{"depth 1, a mapped internal client", IPStrategy{Depth: 1}, "10.0.0.9:1", "::ffff:10.1.2.3", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := validConfig()
			cfg.Limit = 2
			ip := c.ip
			cfg.SourceCriterion = &SourceCriterion{IPStrategy: &ip}
			cfg.Overrides = []string{"10.0.0.0/8=unlimited"}
			h := newMiddleware(t, cfg, "mappedhop"+strconv.Itoa(i)+"@file")
			want := []int{200, 200, 429, 429}
			if c.limit == "" {
				want = []int{200, 200, 200, 200}
			}
			if got := statusesOf(t, h, 4, c.remote, xff(c.header), c.limit); !slices.Equal(got, want) {
				t.Errorf("from %s, X-Forwarded-For %q: %v, want %v", c.remote, c.header, got, want)
			}
		})
	}
}
