package optname

import "testing"

func TestNearest(t *testing.T) {
	known := []string{"depth", "excludedIPs", "ipv6Subnet"}
	for _, tt := range []struct{ k, same, near string }{
		{"dept", "", "depth"},
		{"DEPTH", "depth", ""},
		{"ipv6subnets", "", "ipv6Subnet"},
		{"excludedIP", "", "excludedIPs"},
		{"x", "", ""},
		{"trusted", "", ""},
	} {
		same, near := Nearest(tt.k, known)
		if same != tt.same || near != tt.near {
			t.Errorf("Nearest(%q) = %q, %q; want %q, %q", tt.k, same, near, tt.same, tt.near)
		}
	}
	// The nearest wins over a farther one within reach.
	if _, near := Nearest("limt", []string{"limit", "lim_it_x"}); near != "limit" {
		t.Errorf("Nearest(limt) = %q, want limit", near)
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"limt", "limit", 1},
		{"sourcecriteria", "sourcecriterion", 2},
		{"kitten", "sitting", 3},
	} {
		if d := Distance(tt.a, tt.b); d != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, d, tt.want)
		}
	}
}
