package yaegitest

import (
	"strings"
	"testing"

	"github.com/windowlimit/windowlimit/internal/redistest"
	"github.com/windowlimit/windowlimit/scripts/yaegitest/redisscenario"
)

// TestRedisInterpreted drives shared/resp and the Redis store through
// yaegi against a real redis-server and a real three-master cluster.
func TestRedisInterpreted(t *testing.T) {
	srv := redistest.Start(t)
	cluster := redistest.Cluster(t)
	i := newInterpreter(t)
	evalImport(t, i, "scripts/yaegitest/redisscenario")
	standalone, ok := evalValue(t, i, "redisscenario.Standalone").Interface().(func(string) error)
	if !ok {
		t.Fatal("redisscenario.Standalone has an unexpected type under yaegi")
	}
	clustered := evalValue(t, i, "redisscenario.Cluster").Interface().(func(string) error)
	if err := standalone(srv.Addr()); err != nil {
		t.Fatalf("standalone: %v", err)
	}
	if err := clustered(strings.Join(cluster, ",")); err != nil {
		t.Fatalf("cluster: %v", err)
	}
}

// TestRedisCompiled runs the same scenarios compiled.
func TestRedisCompiled(t *testing.T) {
	srv := redistest.Start(t)
	if err := redisscenario.Standalone(srv.Addr()); err != nil {
		t.Fatalf("standalone: %v", err)
	}
}

// BenchmarkRedisInterpreted reports decisions per second through yaegi,
// pooled and auto-pipelined, at 50 concurrent callers, and the CPU time
// of this process (client and store, not redis-server) per decision.
func BenchmarkRedisInterpreted(b *testing.B) {
	addr := redistest.BenchAddr(b)
	i := newInterpreter(b)
	evalImport(b, i, "scripts/yaegitest/redisscenario")
	throughput := evalValue(b, i, "redisscenario.Throughput").Interface().(func(string, bool, int) (float64, error))
	for _, pipelined := range []bool{false, true} {
		name := "pooled"
		if pipelined {
			name = "pipelined"
		}
		b.Run(name, func(b *testing.B) {
			cpu := cpuTime(b)
			rate, err := throughput(addr, pipelined, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(rate, "decisions/s")
			b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/decision")
		})
	}
}
