package ratelimit

import (
	"strings"
	"testing"
	"time"
)

func TestRuleNormalizeDefaults(t *testing.T) {
	tests := []struct {
		name    string
		rule    Rule
		sub     time.Duration
		cost    int64
		buckets int
	}{
		{"sliding splits the window in ten", Rule{Window: time.Minute, Limit: 10}, 6 * time.Second, 1, 10},
		{"explicit sub-window", Rule{Window: time.Minute, SubWindow: time.Second, Limit: 10, Cost: 2}, time.Second, 2, 60},
		{"strict like sliding", Rule{Window: 10 * time.Second, Limit: 1, Algorithm: Strict}, time.Second, 1, 10},
		{"fixed is one sub-window", Rule{Window: time.Hour, Limit: 5, Algorithm: Fixed}, time.Hour, 1, 1},
		{"log is one sub-window", Rule{Window: time.Hour, Limit: 5, Algorithm: Log}, time.Hour, 1, 1},
		{"window equal to sub-window", Rule{Window: time.Second, SubWindow: time.Second, Limit: 5}, time.Second, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.rule
			if err := r.Normalize(); err != nil {
				t.Fatal(err)
			}
			if r.SubWindow != tt.sub || r.Cost != tt.cost || r.Buckets() != tt.buckets {
				t.Errorf("got sub-window %v cost %d buckets %d, want %v %d %d", r.SubWindow, r.Cost, r.Buckets(), tt.sub, tt.cost, tt.buckets)
			}
		})
	}
}

func TestRuleNormalizeErrors(t *testing.T) {
	tests := []struct {
		rule Rule
		want string
	}{
		{Rule{Limit: 1}, "window must be positive"},
		{Rule{Window: -time.Second, Limit: 1}, "window must be positive"},
		{Rule{Window: time.Minute}, "limit must be positive"},
		{Rule{Window: time.Minute, Limit: -3}, "limit must be positive"},
		{Rule{Window: time.Minute, Limit: 5, Cost: -1}, "cost must be positive"},
		{Rule{Window: time.Minute, Limit: 5, Cost: 6}, "cost 6 exceeds limit 5"},
		{Rule{Window: time.Minute, SubWindow: -time.Second, Limit: 5}, "sub_window must be positive"},
		{Rule{Window: time.Minute, SubWindow: 7 * time.Second, Limit: 5}, "does not divide"},
		{Rule{Window: time.Minute, SubWindow: 2 * time.Minute, Limit: 5}, "longer than window"},
		{Rule{Window: time.Minute, SubWindow: 100 * time.Millisecond, Limit: 5}, "600 sub-windows (at most 128)"},
		{Rule{Window: 15 * time.Nanosecond, Limit: 5}, "cannot be split into 10"},
		{Rule{Window: time.Minute, Limit: MaxLimit + 1}, "too large"},
		{Rule{Window: time.Minute, Limit: MaxLogLimit + 1, Algorithm: Log}, "too large for the log algorithm"},
		{Rule{Window: time.Minute, SubWindow: time.Second, Limit: 5, Algorithm: Log}, "does not apply to the log"},
		{Rule{Window: time.Minute, SubWindow: time.Second, Limit: 5, Algorithm: Fixed}, "does not apply to the fixed"},
		{Rule{Window: time.Minute, Limit: 5, Algorithm: Algorithm(9)}, "unknown algorithm"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			r := tt.rule
			err := r.Normalize()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Normalize(%+v) = %v, want an error containing %q", tt.rule, err, tt.want)
			}
		})
	}
}

func TestParseAlgorithm(t *testing.T) {
	for _, s := range []string{"", "sliding", "STRICT", "fixed", "log"} {
		a, err := ParseAlgorithm(s)
		if err != nil {
			t.Fatalf("ParseAlgorithm(%q): %v", s, err)
		}
		if s != "" && !strings.EqualFold(a.String(), s) {
			t.Errorf("ParseAlgorithm(%q) = %v", s, a)
		}
	}
	if _, err := ParseAlgorithm("token_bucket"); err == nil || !strings.Contains(err.Error(), `"token_bucket"`) {
		t.Errorf("ParseAlgorithm(token_bucket) = %v, want an error naming the value", err)
	}
	if got := Algorithm(7).String(); got != "algorithm(7)" {
		t.Errorf("String of an unknown algorithm = %q", got)
	}
}

func TestNewZoneErrors(t *testing.T) {
	if _, err := NewZone("api", Rule{Window: time.Minute}, Options{}); err == nil || !strings.Contains(err.Error(), `zone "api"`) {
		t.Errorf("bad rule: got %v, want an error naming the zone", err)
	}
	if _, err := NewZone("api", Rule{Window: time.Minute, Limit: 1}, Options{MaxKeys: -1}); err == nil {
		t.Error("negative max keys accepted")
	}
}
