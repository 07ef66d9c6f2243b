package yaegitest

import (
	"runtime"
	"testing"
	"time"

	"github.com/windowlimit/windowlimit/scripts/yaegitest/scenario"
)

// TestCoreInterpreted runs every core scenario through yaegi.
func TestCoreInterpreted(t *testing.T) {
	i := newInterpreter(t)
	evalImport(t, i, "scripts/yaegitest/scenario")
	run, ok := evalValue(t, i, "scenario.Run").Interface().(func(string) error)
	if !ok {
		t.Fatal("scenario.Run has an unexpected type under yaegi")
	}
	for _, name := range scenario.Names {
		t.Run(name, func(t *testing.T) {
			if err := run(name); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCoreCompiled runs the same scenarios compiled, so a failure above
// is known to come from the interpreter.
func TestCoreCompiled(t *testing.T) {
	for _, name := range scenario.Names {
		t.Run(name, func(t *testing.T) {
			if err := scenario.Run(name); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkTakeInterpreted times a decision on one existing key under
// yaegi: through ratelimit.TakeAt (what the plugin calls), denied over the
// limit, and through a naive sliding window for comparison.
// It reports µs/op and the interpreter's heap allocations per decision,
// which, unlike time, do not depend on the machine's load.
func BenchmarkTakeInterpreted(b *testing.B) {
	i := newInterpreter(b)
	evalImport(b, i, "scripts/yaegitest/scenario")
	loop := evalValue(b, i, "scenario.TakeLoop").Interface().(func(int) (time.Duration, error))
	naive := evalValue(b, i, "scenario.NaiveLoop").Interface().(func(int) time.Duration)
	denied := evalValue(b, i, "scenario.DeniedLoop").Interface().(func(int) (time.Duration, error))
	run := func(b *testing.B, f func(n int) time.Duration) {
		f(100) // warm up
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.ResetTimer()
		d := f(b.N)
		b.StopTimer()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N)/1000, "µs/op")
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "interp-allocs/op")
	}
	b.Run("TakeAt", func(b *testing.B) {
		run(b, func(n int) time.Duration {
			d, err := loop(n)
			if err != nil {
				b.Fatal(err)
			}
			return d
		})
	})
	b.Run("TakeAt-denied", func(b *testing.B) {
		run(b, func(n int) time.Duration {
			d, err := denied(n)
			if err != nil {
				b.Fatal(err)
			}
			return d
		})
	})
	b.Run("naive", func(b *testing.B) { run(b, naive) })
}
