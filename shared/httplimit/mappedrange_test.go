package httplimit

import (
	"errors"
	"strings"
	"testing"
)

// TestExcludedMappedRange: an excluded range written in IPv4-mapped form
// excludes its IPv4 addresses, written either way, as Traefik does.
func TestExcludedMappedRange(t *testing.T) {
	for _, r := range []string{"::ffff:10.0.0.0/104", "::ffff:a00:0/104", "::ffff:10.1.2.3/104"} {
		s, err := NewIPStrategy(0, []string{r}, 0)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		for _, xff := range []string{"1.1.1.1, 10.0.0.1", "1.1.1.1, ::ffff:10.0.0.1", "1.1.1.1, 10.255.255.255, ::ffff:10.9.9.9"} {
			if got := clientIP(s, request("", xff)); got != "1.1.1.1" {
				t.Errorf("excluded %s, X-Forwarded-For %q: client %q, want 1.1.1.1", r, xff, got)
			}
		}
		if got := clientIP(s, request("", "1.1.1.1, 11.0.0.1")); got != "11.0.0.1" {
			t.Errorf("excluded %s: 11.0.0.1 is excluded too", r)
		}
	}
	s, err := NewIPStrategy(0, []string{"::ffff:0:0/96"}, 128)
	if err != nil {
		t.Fatal(err)
	}
	if got := clientIP(s, request("", "2001:db8::1, 1.1.1.1, ::ffff:10.0.0.1")); got != "2001:db8::1" {
		t.Errorf("::ffff:0:0/96 excludes every IPv4 address: client %q, want 2001:db8::1", got)
	}
}

// TestExcludedMappedRangeTooShort: a mapped range shorter than /96 would
// reach beyond the IPv4 addresses it names, and is an error.
func TestExcludedMappedRangeTooShort(t *testing.T) {
	for _, r := range []string{"::ffff:10.0.0.0/95", "::ffff:0:0/80", "::ffff:10.0.0.0/0"} {
		_, err := NewIPStrategy(0, []string{"10.0.0.0/8", r}, 0)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "excludedIPs[1]" || !strings.Contains(fe.Msg, "/96") {
			t.Errorf("excluded %s: %v, want an error on excludedIPs[1] that names /96", r, err)
		}
	}
}
