package main

import "fmt"

// fast adds the deterministic counts (-fast, in scripts/test.sh).
func (t *table) fast() {
	keysize := goTest("keysize", "", nil, "-count=1", "-run", "BytesPerKey", "-v", "./shared/redisstore")
	ipv4 := `rl:api:\{203\.0\.113\.77\}: (\d+) bytes`
	ipv6 := `rl:api:\{2001:db8:1234:5678::/64\}: (\d+) bytes`
	t.add("exact", "redis.md: MEMORY USAGE, IPv4 key", "docs/redis.md", `203\.0\.113\.77\}\x60, sliding, all 11 sub-windows[^|]*\|\s*(\d+)`, keysize, ipv4)
	t.add("exact", "redis.md: MEMORY USAGE, IPv6 /64 key", "docs/redis.md", `5678::/64\}\x60, the same \|\s*(\d+)`, keysize, ipv6)
	t.add("exact", "benchmarks.md: MEMORY USAGE, IPv4 key", bm, `39-byte\s+string\):\s+(\d+)\s+bytes\s+for\s+an\s+IPv4`, keysize, ipv4)
	t.add("exact", "benchmarks.md: MEMORY USAGE, IPv6 /64 key", bm, `IPv4\s+key,\s+(\d+)\s+for\s+an\s+IPv6`, keysize, ipv6)

	flood := floodCmd
	t.add("exact", "security.md: flood, limited client admitted (of 80)", "docs/security.md", `one request each \| (\d+) of 80`, flood, `slipped (\d+)/80;`)
	t.add("exact", "security.md: moderate flood, admitted (of 1000)", "docs/security.md", `one request each \| (\d+) of 1000`, flood, `slipped (\d+)/1000;`)

	headers := goTest("headers", "", nil, "-count=1", "-run", "TestHeadersPastTheWindow", "-v", "./shared/httplimit")
	for _, alg := range []string{"sliding", "strict", "fixed", "log"} {
		t.add("exact", "headers.md: "+alg+", 1m, Retry-After", "docs/headers.md", `^\| \x60`+alg+`\x60 \| 1m[^|]*\| 10 \| (\d+) \|`,
			headers, `^\s*headers_test.go:\d+: `+alg+`, window 1m0s.*Retry-After (\d+),`)
		t.add("exact", "headers.md: "+alg+", 1m, X-RateLimit-Reset", "docs/headers.md", `^\| \x60`+alg+`\x60 \| 1m[^|]*\| 10 \| \d+ \| (\d+) \|`,
			headers, `^\s*headers_test.go:\d+: `+alg+`, window 1m0s.*X-RateLimit-Reset (\d+)$`)
	}
	t.add("exact", "headers.md: sliding, 15m, Retry-After", "docs/headers.md", `^\| \x60sliding\x60 \| 15m[^|]*\| 5 \| (\d+) \|`,
		headers, `window 15m0s.*Retry-After (\d+),`)
	t.add("exact", "headers.md: sliding, 15m, X-RateLimit-Reset", "docs/headers.md", `^\| \x60sliding\x60 \| 15m[^|]*\| 5 \| \d+ \| (\d+) \|`,
		headers, `window 15m0s.*X-RateLimit-Reset (\d+)$`)

	accuracy := goTest("accuracy", "", nil, "-count=1", "-run", "TestAccuracyReport", "-v", "./shared/ratelimit")
	for _, alg := range []string{"log", "fixed", "sliding k=5", "sliding k=10", "sliding k=30", "strict k=5", "strict k=10", "strict k=30"} {
		re := `^\s*(` + q(alg) + `\s+\|.*?)\s*$`
		t.add("exact", "algorithms.md: accuracy table, "+alg, "docs/algorithms.md", re, accuracy, re)
	}
	// The prose drawn from the table: sliding and strict at 1.5x (column
	// 3: Poisson, 7: on/off, 11: clumps); peak is a cell's first value
	// (the most in any window), thr its second (the throughput).
	cell := func(alg string, col int) string {
		return fmt.Sprintf(`^\s*%s\s+\|(?:[^|]*\|){%d}\s*`, q(alg), col-1)
	}
	peak := func(alg string, col int) string { return cell(alg, col) + `(\d\.\d\d) / \d\.\d\d` }
	thr := func(alg string, col int) string { return cell(alg, col) + `\d\.\d\d / (\d\.\d\d)` }
	t.add("exact/0.01", "algorithms.md: sliding, 1.5x Poisson, % of the ideal", "docs/algorithms.md", `within\s+5%\s+of\s+\x60N\x60\s+with\s+(\d+)%\s+of\s+the\s+ideal`,
		accuracy, thr("sliding k=10", 3))
	t.add("exact", "algorithms.md: sliding, 1.5x on/off, peak", "docs/algorithms.md", `up\s+to\s+(\S+)\s+on/off`, accuracy, peak("sliding k=10", 7))
	t.add("exact", "algorithms.md: sliding, 1.5x clumps, peak", "docs/algorithms.md", `on/off\s+and\s+(\S+)\s+with\s+clumps`, accuracy, peak("sliding k=10", 11))
	t.add("exact", "algorithms.md: strict k=10, 1.5x Poisson, thr", "docs/algorithms.md", `throughput\s+\((\S+)\s+at\s+1\.5x\s+Poisson`, accuracy, thr("strict k=10", 3))
	t.add("exact", "algorithms.md: strict k=30, 1.5x Poisson, thr", "docs/algorithms.md", `sub-windows,\s+(\S+)\s+with\s+30\)`, accuracy, thr("strict k=30", 3))
	// The prose's range: log's throughput on bursty traffic (the on/off
	// and clumps columns).
	for col := 4; col <= 11; col++ {
		t.add("range", fmt.Sprintf("algorithms.md: log, bursty column %d of 8, thr", col-3), "docs/algorithms.md", `exact\s+\x60log\x60\s+reaches\s+(\S+)\s+of`,
			accuracy, fmt.Sprintf(`^\s*log\s+\|(?:[^|]*\|){%d}\s*\d\.\d\d / (\d\.\d\d)`, col))
	}
	// How far sliding goes over N at 1.5x Poisson, and the most fixed
	// lets through on any trace.
	t.add("max", "algorithms.md: sliding k=10, 1.5x Poisson, % over N", "docs/algorithms.md", `stays\s+within\s+(\d+)%\s+of\s+\x60N\x60`,
		derived(accuracy, "over", slidingOverN), `poisson 1\.5x: (\d+)% over N`)
	t.add("exact", "algorithms.md: fixed, the most in any window", "docs/algorithms.md", `\x60fixed\x60\s+lets\s+up\s+to\s+(\S+)x`,
		derived(accuracy, "fixed", fixedMost), `the most in any window: (\S+)x N`)

	exact := goTest("exact", "", nil, "-race", "-count=1", "-run", "RedisExact", "-v", "./shared/redisstore", "./caddymodule")
	admitted := `960 attempts on one key: (\d+) admitted, limit 300`
	t.add("exact", "README.md: RedisExact, admitted of 960", "README.md", `960\s+attempts\s+on\s+one\s+key:\s+(\d+)\s+admitted`, exact, admitted)
	t.add("exact", "why.md: RedisExact, admitted of 960", "docs/why.md", `960 attempts on one key: (\d+) admitted`, exact, admitted)

	leasesim := goTest("leasesim", "", nil, "-count=1", "-run", "TestDifferentialLeases|TestFleetSimulation", "-v", "./shared/lease")
	calls := `all allowed: 100 instances.*?: (\d+) script calls/s`
	t.add("exact", "redis.md: fleet, script calls a second, all allowed", "docs/redis.md", `\*\*([\d,]+)\s+script\s+calls\s+a\s+second`, leasesim, calls)
	t.add("exact", "redis.md: fleet, script calls per decision", "docs/redis.md", `decisions\*\*\s+\((\S+)\s+per\s+decision\)`,
		leasesim, `all allowed: 100 instances.*?\((0\.\d+) per decision\)`)
	t.add("exact", "redis.md: fleet, strict, script calls a second", "docs/redis.md", `twice\s+the\s+limit,\s+([\d,]+)\s+calls\s+a\s+second`,
		leasesim, `strict at twice the limit: 100 instances.*?: (\d+) script calls/s`)
	t.add("exact", "redis.md: fleet, strict, admitted", "docs/redis.md", `admit\s+\(([\d,]+)\s+of\s+[\d,]+\)`,
		leasesim, `strict at twice the limit:.*?admitted (\d+), per-request`)
	t.add("exact", "redis.md: fleet, strict, per-request decisions", "docs/redis.md", `admit\s+\([\d,]+\s+of\s+([\d,]+)\)`,
		leasesim, `strict at twice the limit:.*?per-request (\d+)`)
	t.add("range", "redis.md: lease traces, admitted on / off", "docs/redis.md", `at\s+least\s+0\.9\s+of\s+it\s+\((\S+\s+to\s+\S+)\s+in`,
		leasesim, `leases on admitted \d+, off \d+ \((\S+)\)`)
	t.add("exact", "redis.md: lease traces, most over the limit after a reset", "docs/redis.md", `over\s+the\s+limit\s+\((\d+)\s+in\s+every\s+run`,
		leasesim, `a window holding a reset admitted at most (\d+) over the limit`)
	t.add("exact", "README.md: fleet, Redis calls a second", "README.md", `one\s+key:\s+([\d,]+)\s+Redis\s+calls\s+a\s+second`, leasesim, calls)
	t.add("exact", "why.md: fleet, Redis calls a second", "docs/why.md", `one\s+key\s+make\s+([\d,]+)\s+Redis\s+calls\s+a\s+second`, leasesim, calls)

	diff := goTest("diff", "", nil, "-count=1", "-run", "TestRefundAfterForget|TestDifferential$", "-v", "./shared/redisstore")
	t.add("exact", "redis.md: differential, seeds", "docs/redis.md", `random\s+traces\s+\((\d+)\s+seeds\s+by\s+default`, diff, `differential_test.go:\d+: (\d+) seeds`)
	t.add("exact", "redis.md: differential, refunds before a reset", "docs/redis.md", `counts\s+the\s+refunds\s+of\s+before\s+a\s+reset,\s+(all\s+refused)`,
		diff, `refunds of a count reserved before its key.s reset, (all refused)`)

	reset := resetCmd
	t.add("exact", "redis.md: an operator's reset, over the limit", "docs/redis.md", `operator's\s+reset\s+admitting\s+[^(]*\((\d+)\s+over\)`,
		reset, `admin reset .*\((\d+) over\)`)

	// The units the two leases hold at the reset depend on the
	// goroutines' order: a range over runs, not for -fast.
	t.tier = tierFastFull
	t.add("range", "redis.md: reset, units in the two leases", "docs/redis.md", `two\s+instances\s+holding\s+(\d+\s+to\s+\d+)\s+units`,
		reset, `reset with (\d+) units in leases`)
}

// The commands the figures of two tiers read.
var (
	floodCmd = goTest("flood", "", nil, "-count=1", "-run", "TestFloodCannot|TestModerateFlood", "-v", "./shared/ratelimit")
	// resetCmd is an operator's reset while two instances hold leases.
	resetCmd   = goTest("reset", "", nil, "-count=1", "-run", "TestResetMidLeaseTwoInstances", "-v", "./shared/lease")
	configsCmd = goTest("configs", yaegitest, nil, "-run", noTests, "-bench", "PluginConfigs", "-benchtime", "20000x", "-count", "2", ".")
)
