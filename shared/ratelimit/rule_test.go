package ratelimit

import (
	"errors"
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
			if r.SubWindow != tt.sub || r.Cost != tt.cost || r.buckets() != tt.buckets {
				t.Errorf("got sub-window %v cost %d buckets %d, want %v %d %d", r.SubWindow, r.Cost, r.buckets(), tt.sub, tt.cost, tt.buckets)
			}
		})
	}
}

func TestRuleNormalizeErrors(t *testing.T) {
	tests := []struct {
		rule  Rule
		field Field
		want  string
	}{
		{Rule{Limit: 1}, FieldWindow, "must be positive, got 0s"},
		{Rule{Window: -time.Second, Limit: 1}, FieldWindow, "must be positive"},
		{Rule{Window: time.Minute}, FieldLimit, "must be positive, got 0"},
		{Rule{Window: time.Minute, Limit: -3}, FieldLimit, "must be positive"},
		{Rule{Window: time.Minute, Limit: 5, Cost: -1}, FieldCost, "must be positive"},
		{Rule{Window: time.Minute, Limit: 5, Cost: 6}, FieldCost, "6 exceeds the limit 5"},
		{Rule{Window: time.Minute, SubWindow: -time.Second, Limit: 5}, FieldSubWindow, "must be positive"},
		{Rule{Window: time.Minute, SubWindow: 7 * time.Second, Limit: 5}, FieldSubWindow, "7s does not divide the window 1m0s"},
		{Rule{Window: time.Minute, SubWindow: 2 * time.Minute, Limit: 5}, FieldSubWindow, "longer than the window"},
		{Rule{Window: time.Minute, SubWindow: 100 * time.Millisecond, Limit: 5}, FieldSubWindow, "600 sub-windows (at most 128)"},
		{Rule{Window: 15 * time.Nanosecond, Limit: 5}, FieldSubWindow, "cannot be split into 10"},
		{Rule{Window: time.Minute, Limit: MaxLimit + 1}, FieldLimit, "too large"},
		{Rule{Window: time.Minute, Limit: MaxLogLimit + 1, Algorithm: Log}, FieldLimit, "too large for the log algorithm"},
		{Rule{Window: time.Minute, SubWindow: time.Second, Limit: 5, Algorithm: Log}, FieldSubWindow, "does not apply to the log"},
		{Rule{Window: time.Minute, SubWindow: time.Second, Limit: 5, Algorithm: Fixed}, FieldSubWindow, "does not apply to the fixed"},
		{Rule{Window: time.Minute, Limit: 5, Algorithm: Algorithm(9)}, FieldAlgorithm, "unknown algorithm"},
		{Rule{Window: MaxWindow + 1, Limit: 5}, FieldWindow, "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			r := tt.rule
			err := r.Normalize()
			fe, ok := err.(*FieldError)
			if !ok || fe.Field != tt.field || !strings.Contains(fe.Msg, tt.want) {
				t.Fatalf("Normalize(%+v) = %#v, want a *FieldError of %v containing %q", tt.rule, err, tt.field, tt.want)
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
	tests := []struct {
		rule  Rule
		opts  Options
		field Field
	}{
		{Rule{Window: time.Minute}, Options{}, FieldLimit},
		{Rule{Window: time.Minute, Limit: 1}, Options{MaxKeys: -1}, FieldMaxKeys},
		{Rule{Window: time.Minute, Limit: 1}, Options{MaxKeys: MaxMaxKeys + 1}, FieldMaxKeys},
		{Rule{Window: time.Minute, Limit: 1}, Options{SweepInterval: time.Millisecond}, FieldSweepInterval},
	}
	for _, tt := range tests {
		z, err := NewZone("api", tt.rule, tt.opts)
		if fe, ok := err.(*FieldError); !ok || fe.Field != tt.field {
			t.Errorf("NewZone(%+v, %+v) = %#v, want a *FieldError of %v", tt.rule, tt.opts, err, tt.field)
		}
		if z != nil {
			z.Close()
		}
	}
}

func TestSpelling(t *testing.T) {
	spell := &Spelling{FieldSubWindow: "spelt"}
	err := spell.Error(&FieldError{Field: FieldSubWindow, Msg: "bad"})
	if got := err.Error(); got != "spelt: bad" {
		t.Errorf("spelled error = %q", got)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != FieldSubWindow {
		t.Errorf("spelled error does not unwrap to its *FieldError: %#v", err)
	}
	if got := spell.Error(&FieldError{Field: FieldLimit, Msg: "bad"}).Error(); got != "Limit: bad" {
		t.Errorf("a field without a spelling: %q, want its Go name", got)
	}
	other := errors.New("other")
	if spell.Error(other) != other {
		t.Error("an error that is not a *FieldError was changed")
	}
}
