package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Algorithm selects how a rule counts requests inside its window.
type Algorithm uint8

const (
	// Sliding counts the sub-windows inside the window plus the sub-window
	// that is leaving it, weighted by the part still inside. It is the
	// default: close to exact (see the accuracy table in docs/algorithms.md) with O(W/T)
	// memory per key.
	Sliding Algorithm = iota
	// Fixed counts requests in windows aligned to multiples of W and resets
	// at each boundary. It admits up to 2N across a boundary.
	Fixed
	// Strict is Sliding with the leaving sub-window counted whole. It never
	// admits more than N requests in any interval of length W, at the price
	// of up to one sub-window of throughput.
	Strict
	// Log keeps the timestamp of every admitted request: exact, with memory
	// O(N) per key, so it is capped at MaxLogLimit.
	Log
)

// Bounds on rule values; beyond them memory or arithmetic stop being sane.
const (
	// MaxBuckets bounds W/T: the memory and the worst-case work per key.
	MaxBuckets = 128
	// MaxLogLimit bounds N for the Log algorithm, which stores N timestamps.
	MaxLogLimit = 1024
	// MaxLimit bounds N for the bucket algorithms (counters are uint32).
	MaxLimit = 1 << 30
	// DefaultBuckets is W/T when no sub-window is given.
	DefaultBuckets = 10
	// MaxWindow bounds W. The in-memory zones index sub-windows from the
	// Unix epoch and need every sub-window a decision reads, back to t-W-T,
	// to have a non-negative index: t >= W. A zone counts a clock that
	// reads less than W after 1970 as if it read W (and one past
	// MaxInt64-2(W+T) as that), so a window longer than the time since
	// 1970 (57 years in 2026; it panicked before) would freeze the clock.
	// At 10 years every clock from 1980 to 2222 is taken as it is.
	MaxWindow = 10 * 365 * 24 * time.Hour
)

var algorithmNames = [...]string{Sliding: "sliding", Fixed: "fixed", Strict: "strict", Log: "log"}

// String returns the configuration name of a.
func (a Algorithm) String() string {
	if int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return "algorithm(" + strconv.Itoa(int(a)) + ")"
}

// ParseAlgorithm returns the algorithm named s; the empty string is Sliding.
func ParseAlgorithm(s string) (Algorithm, error) {
	if s == "" {
		return Sliding, nil
	}
	for i, name := range algorithmNames {
		if strings.EqualFold(s, name) {
			return Algorithm(i), nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %q (want sliding, strict, fixed or log)", s)
}

// Rule is one limit: at most Limit requests (of Cost each) per Window.
type Rule struct {
	// Window is W, the length of the interval the limit applies to.
	Window time.Duration
	// SubWindow is T, the resolution of the counters. It must divide
	// Window; zero means Window/10 (or Window for Fixed and Log).
	SubWindow time.Duration
	// Limit is N, the most requests admitted per window.
	Limit int64
	// Algorithm selects the counting method; the zero value is Sliding.
	Algorithm Algorithm
	// Cost is what one request consumes; zero means 1.
	Cost int64
}

// Normalize fills the defaults into r and reports the first bad value.
func (r *Rule) Normalize() error {
	if r.Window <= 0 {
		return fmt.Errorf("window must be positive, got %v", r.Window)
	}
	if r.Window > MaxWindow {
		return fmt.Errorf("window %v is too long (at most %v, 10 years)", r.Window, MaxWindow)
	}
	if r.Algorithm > Log {
		return fmt.Errorf("unknown algorithm %v", r.Algorithm)
	}
	if r.Limit <= 0 {
		return fmt.Errorf("limit must be positive, got %d", r.Limit)
	}
	if r.Cost == 0 {
		r.Cost = 1
	}
	if r.Cost < 0 {
		return fmt.Errorf("cost must be positive, got %d", r.Cost)
	}
	if r.Cost > r.Limit {
		return fmt.Errorf("cost %d exceeds limit %d: no request could ever pass", r.Cost, r.Limit)
	}
	switch r.Algorithm {
	case Log:
		if r.Limit > MaxLogLimit {
			return fmt.Errorf("limit %d is too large for the log algorithm (at most %d; use sliding or strict)", r.Limit, MaxLogLimit)
		}
		if r.SubWindow != 0 && r.SubWindow != r.Window {
			return errors.New("sub_window does not apply to the log algorithm")
		}
		r.SubWindow = r.Window
		return nil
	case Fixed:
		if r.SubWindow != 0 && r.SubWindow != r.Window {
			return errors.New("sub_window does not apply to the fixed algorithm")
		}
		r.SubWindow = r.Window
	}
	if r.Limit > MaxLimit {
		return fmt.Errorf("limit %d is too large (at most %d)", r.Limit, MaxLimit)
	}
	if r.SubWindow == 0 {
		r.SubWindow = r.Window / DefaultBuckets
		if r.Window%DefaultBuckets != 0 {
			return fmt.Errorf("window %v cannot be split into %d sub-windows; set sub_window", r.Window, DefaultBuckets)
		}
	}
	if r.SubWindow < 0 {
		return fmt.Errorf("sub_window must be positive, got %v", r.SubWindow)
	}
	if r.SubWindow > r.Window {
		return fmt.Errorf("sub_window %v is longer than window %v", r.SubWindow, r.Window)
	}
	if r.Window%r.SubWindow != 0 {
		return fmt.Errorf("sub_window %v does not divide window %v", r.SubWindow, r.Window)
	}
	if n := r.Window / r.SubWindow; n > MaxBuckets {
		return fmt.Errorf("window %v / sub_window %v is %d sub-windows (at most %d)", r.Window, r.SubWindow, n, MaxBuckets)
	}
	return nil
}

// Buckets returns k = W/T, the number of sub-windows in the window.
func (r *Rule) Buckets() int { return int(r.Window / r.SubWindow) }
