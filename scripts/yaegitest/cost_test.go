package yaegitest

import (
	"testing"
	"time"
)

// costSource holds loops that each repeat one kind of statement, so that
// BenchmarkInterpretedCosts can show what each costs under yaegi v0.16.1.
// It guided the plugin's hot path (traefikplugin/middleware.go).
const costSource = `package cost

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

type P struct{ n int64 }

func (p *P) plain(x int64) int64 { return x + p.n }

type T struct{ n int64; h http.Header; s []string }

func (t *T) method(x int64) int64 { return x + 1 }
func function(x int64) int64     { return x + 1 }

type I interface{ method(x int64) int64 }

var table = []string{"0", "1", "2", "3"}

func Loop(kind string, n int) time.Duration {
	t := &T{h: http.Header{}, s: []string{"x"}}
	var i I = t
	var x int64
	start := time.Now()
	switch kind {
	case "empty":
		for k := 0; k < n; k++ {
		}
	case "add":
		for k := 0; k < n; k++ {
			x += 2
		}
	case "function":
		for k := 0; k < n; k++ {
			x = function(x)
		}
	case "method":
		for k := 0; k < n; k++ {
			x = t.method(x)
		}
	case "interface":
		for k := 0; k < n; k++ {
			x = i.method(x)
		}
	case "closure":
		f := func(y int64) int64 { return y + 1 }
		for k := 0; k < n; k++ {
			x = f(x)
		}
	case "time.Now":
		for k := 0; k < n; k++ {
			time.Now()
		}
	case "strconv.FormatInt":
		for k := 0; k < n; k++ {
			strconv.FormatInt(12345, 10)
		}
	case "table":
		for k := 0; k < n; k++ {
			_ = table[k&3]
		}
	case "SplitHostPort":
		for k := 0; k < n; k++ {
			net.SplitHostPort("203.0.113.7:4711")
		}
	case "header-assign-shared":
		for k := 0; k < n; k++ {
			t.h["X-Ratelimit-Limit"] = t.s
		}
	case "header-assign-new":
		for k := 0; k < n; k++ {
			t.h["X-Ratelimit-Limit"] = []string{"1"}
		}
	case "header-Set":
		for k := 0; k < n; k++ {
			t.h.Set("X-RateLimit-Limit", "1")
		}
	case "plain-method":
		p := &P{n: 1}
		for k := 0; k < n; k++ {
			x = p.plain(x)
		}
	case "LastIndexByte":
		for k := 0; k < n; k++ {
			x += int64(strings.LastIndexByte("203.0.113.7:4711", ':'))
		}
	case "UnixNano":
		for k := 0; k < n; k++ {
			x += time.Now().UnixNano()
		}
	case "compiled-interface":
		var w http.ResponseWriter = httptest.NewRecorder()
		for k := 0; k < n; k++ {
			w.Header()
		}
	case "defer":
		for k := 0; k < n; k++ {
			func() { defer func() {}() }()
		}
	case "make-chan":
		for k := 0; k < n; k++ {
			_ = make(chan struct{})
		}
	case "close-recv":
		for k := 0; k < n; k++ {
			c := make(chan struct{})
			close(c)
			<-c
		}
	case "close-select":
		ctx := context.Background()
		for k := 0; k < n; k++ {
			c := make(chan struct{})
			close(c)
			select {
			case <-c:
			case <-ctx.Done():
			}
		}
	case "mutex":
		var mu sync.Mutex
		for k := 0; k < n; k++ {
			mu.Lock()
			mu.Unlock()
		}
	case "new-struct":
		for k := 0; k < n; k++ {
			_ = &T{n: 1}
		}
	case "func-value":
		f := function
		for k := 0; k < n; k++ {
			x = f(x)
		}
	case "method-value":
		f := t.method
		for k := 0; k < n; k++ {
			x = f(x)
		}
	case "interface-method-value":
		f := i.method
		for k := 0; k < n; k++ {
			x = f(x)
		}
	case "concat":
		a, c := "abcdefghijklmnopqrstuvwxyz", "0123456789"
		for k := 0; k < n; k++ {
			_ = a + c + a + c
		}
	}
	return time.Since(start)
}
`

// BenchmarkInterpretedCosts prints the cost of single statements under
// yaegi, in ns per statement.
func BenchmarkInterpretedCosts(b *testing.B) {
	i := newInterpreter(b)
	if _, err := i.Eval(costSource); err != nil {
		b.Fatal(err)
	}
	loop := evalValue(b, i, "cost.Loop").Interface().(func(string, int) time.Duration)
	for _, kind := range []string{"empty", "add", "function", "method", "interface", "closure", "time.Now", "strconv.FormatInt", "table", "SplitHostPort", "header-assign-shared", "header-assign-new", "header-Set", "defer", "plain-method", "LastIndexByte", "UnixNano", "compiled-interface", "make-chan", "close-recv", "close-select", "mutex", "new-struct", "concat", "func-value", "method-value", "interface-method-value"} {
		b.Run(kind, func(b *testing.B) {
			d := loop(kind, b.N)
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "ns/stmt")
		})
	}
}
