package ratelimit

import (
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

// Normalize fills the defaults into r and reports the first bad value as
// a *FieldError.
func (r *Rule) Normalize() error {
	if r.Window <= 0 {
		return fieldError(FieldWindow, "must be positive, got "+r.Window.String())
	}
	if r.Window > MaxWindow {
		return fieldError(FieldWindow, r.Window.String()+" is too long (at most "+MaxWindow.String()+", 10 years)")
	}
	if r.Algorithm > Log {
		return fieldError(FieldAlgorithm, "unknown algorithm "+r.Algorithm.String())
	}
	if r.Limit <= 0 {
		return fieldError(FieldLimit, "must be positive, got "+strconv.FormatInt(r.Limit, 10))
	}
	if r.Cost == 0 {
		r.Cost = 1
	}
	if r.Cost < 0 {
		return fieldError(FieldCost, "must be positive, got "+strconv.FormatInt(r.Cost, 10))
	}
	if r.Cost > r.Limit {
		return fieldError(FieldCost, strconv.FormatInt(r.Cost, 10)+" exceeds the limit "+strconv.FormatInt(r.Limit, 10)+": no request could ever pass")
	}
	switch r.Algorithm {
	case Log:
		if r.Limit > MaxLogLimit {
			return fieldError(FieldLimit, strconv.FormatInt(r.Limit, 10)+" is too large for the log algorithm (at most "+strconv.Itoa(MaxLogLimit)+"; use sliding or strict)")
		}
		if r.SubWindow != 0 && r.SubWindow != r.Window {
			return fieldError(FieldSubWindow, "does not apply to the log algorithm")
		}
		r.SubWindow = r.Window
		return nil
	case Fixed:
		if r.SubWindow != 0 && r.SubWindow != r.Window {
			return fieldError(FieldSubWindow, "does not apply to the fixed algorithm")
		}
		r.SubWindow = r.Window
	}
	if r.Limit > MaxLimit {
		return fieldError(FieldLimit, strconv.FormatInt(r.Limit, 10)+" is too large (at most "+strconv.Itoa(MaxLimit)+")")
	}
	if r.SubWindow == 0 {
		if r.Window%DefaultBuckets != 0 {
			return fieldError(FieldSubWindow, "required: the window "+r.Window.String()+" cannot be split into "+strconv.Itoa(DefaultBuckets)+" sub-windows")
		}
		r.SubWindow = r.Window / DefaultBuckets
	}
	if r.SubWindow < 0 {
		return fieldError(FieldSubWindow, "must be positive, got "+r.SubWindow.String())
	}
	if r.SubWindow > r.Window {
		return fieldError(FieldSubWindow, r.SubWindow.String()+" is longer than the window "+r.Window.String())
	}
	if r.Window%r.SubWindow != 0 {
		return fieldError(FieldSubWindow, r.SubWindow.String()+" does not divide the window "+r.Window.String())
	}
	if n := r.Window / r.SubWindow; n > MaxBuckets {
		return fieldError(FieldSubWindow, r.SubWindow.String()+" splits the window "+r.Window.String()+" into "+strconv.FormatInt(int64(n), 10)+" sub-windows (at most "+strconv.Itoa(MaxBuckets)+")")
	}
	return nil
}

// buckets returns k = W/T, the number of sub-windows in the window.
func (r *Rule) buckets() int { return int(r.Window / r.SubWindow) }
