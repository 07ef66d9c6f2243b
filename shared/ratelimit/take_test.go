package ratelimit

import (
	"testing"
	"time"
)

var start = time.Unix(1699999200, 0) // a multiple of every sub-window used here (whole hours)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// step is one request of a scripted trace and the decision it must get.
type step struct {
	at    time.Duration // since start
	n     int           // repeat count; 0 means 1
	want  Decision      // of the last repetition
	key   string
	label string
}

func TestTakeScripted(t *testing.T) {
	tests := []struct {
		name  string
		rule  Rule
		steps []step
	}{
		{"sliding weighs the leaving sub-window", Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 10}, []step{
			{at: ms(500), n: 10, want: Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: ms(10500)}},
			// Sub-window 0 leaves between 10s and 11s: 10*(11-t) <= 9 from 10.1s.
			{at: ms(500), want: Decision{Limit: 10, RetryAfter: ms(9600), ResetAfter: ms(10500)}},
			{at: ms(10099), want: Decision{Limit: 10, RetryAfter: time.Millisecond, ResetAfter: ms(901)}},
			{at: ms(10100), want: Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: ms(10900)}},
			// At 10.5s sub-window 0 counts 5, plus the one admitted at 10.1s: 6.
			{at: ms(10500), want: Decision{Allowed: true, Limit: 10, Remaining: 3, ResetAfter: ms(10500)}},
		}},
		{"sliding with cost", Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 10, Cost: 3}, []step{
			{at: 0, n: 3, want: Decision{Allowed: true, Limit: 10, Remaining: 1, ResetAfter: ms(11000)}},
			{at: ms(1), want: Decision{Limit: 10, Remaining: 1, RetryAfter: 10221222223, ResetAfter: ms(10999)}, label: "needs 9*(11-t)<=7: t >= 11-7/9 s"},
		}},
		{"strict counts the leaving sub-window whole", Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 3, Algorithm: Strict}, []step{
			{at: ms(500), n: 3, want: Decision{Allowed: true, Limit: 3, ResetAfter: ms(10500)}},
			{at: ms(10500), want: Decision{Limit: 3, RetryAfter: ms(500), ResetAfter: ms(500)}},
			{at: ms(11000), want: Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: ms(11000)}},
		}},
		{"fixed resets at the boundary", Rule{Window: 10 * time.Second, Limit: 3, Algorithm: Fixed}, []step{
			{at: ms(9900), n: 3, want: Decision{Allowed: true, Limit: 3, ResetAfter: ms(100)}},
			{at: ms(9950), want: Decision{Limit: 3, RetryAfter: ms(50), ResetAfter: ms(50)}},
			{at: ms(10000), want: Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: ms(10000)}},
		}},
		{"log is exact", Rule{Window: 10 * time.Second, Limit: 3, Algorithm: Log}, []step{
			{at: 0, want: Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: ms(10000)}},
			{at: ms(1000), want: Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: ms(10000)}},
			{at: ms(2000), want: Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: ms(10000)}},
			{at: ms(9900), want: Decision{Limit: 3, RetryAfter: ms(100), ResetAfter: ms(2100)}},
			{at: ms(10000), want: Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: ms(10000)}},
			{at: ms(10500), want: Decision{Limit: 3, RetryAfter: ms(500), ResetAfter: ms(9500)}},
		}},
		{"keys are independent", Rule{Window: time.Minute, Limit: 1}, []step{
			{at: 0, key: "a", want: Decision{Allowed: true, Limit: 1, ResetAfter: ms(66000)}},
			{at: 0, key: "b", want: Decision{Allowed: true, Limit: 1, ResetAfter: ms(66000)}},
			{at: 0, key: "", want: Decision{Allowed: true, Limit: 1, ResetAfter: ms(66000)}, label: "the empty key is a key"},
			{at: 0, key: "a", want: Decision{Limit: 1, RetryAfter: ms(66000), ResetAfter: ms(66000)}, label: "with N=1 the leaving weight must reach 0"},
		}},
		{"clock going back counts in the newest sub-window", Rule{Window: 10 * time.Second, SubWindow: time.Second, Limit: 2, Algorithm: Strict}, []step{
			{at: ms(5000), want: Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: ms(11000)}},
			{at: ms(3000), want: Decision{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: ms(11000)}},
			{at: ms(3000), want: Decision{Limit: 2, RetryAfter: ms(11000), ResetAfter: ms(11000)}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z := newZone(t, "test", tt.rule, Options{})
			for i, s := range tt.steps {
				n := s.n
				if n == 0 {
					n = 1
				}
				var got Decision
				for j := 0; j < n; j++ {
					got = TakeAt(z, s.key, start.Add(s.at))
				}
				if got != s.want {
					t.Fatalf("step %d %s at %v: got %+v, want %+v", i, s.label, s.at, got, s.want)
				}
			}
		})
	}
}
