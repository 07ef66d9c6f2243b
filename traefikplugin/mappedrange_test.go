package traefikplugin

import (
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
