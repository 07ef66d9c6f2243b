package main

import (
	"slices"
	"strconv"
)

// redis adds scripts/bench-redis.sh 100000 3: throughput, what a call
// costs Redis in µs and in instructions (callgrind), the keys it leaves.
func (t *table) redis() {
	redisbench := script("redisbench", nil, "scripts/bench-redis.sh", "100000", "3")
	t.add("@tol:40", "benchmarks.md: Redis, pipelined ceiling, decisions/s", bm, `^\| \x60redis-cli --pipe\x60[^|]*\| ([\d,]+) \|`,
		redisbench, `^\d+ decisions in \d+ ms: (\d+) decisions/s`)
	for _, b := range [][2]string{
		{"Resp/pooled", "shared/resp (Traefik's client), pooled"},
		{"Resp/pipelined", "shared/resp, auto-pipelined"},
		{"GoRedis", "go-redis v9 (Caddy's client), pipelined"},
	} {
		d, s := `^\| `+q(b[1])+` \| `, `^BenchmarkRedisStore`+b[0]+`-\d+\s.*?`
		t.add("@tol:40", "benchmarks.md: Redis, "+b[0]+", decisions/s", bm, d+`([\d,]+) \|`, redisbench, s+`(\S+) decisions/s`)
		t.add("tol:25", "benchmarks.md: Redis, "+b[0]+", of the ceiling", bm, d+`[\d,]+ \| (\S+) \|`, redisbench, s+`(\S+) of the pipelined ceiling`)
		t.add("exact", "benchmarks.md: Redis, "+b[0]+", round trips per decision", bm, `commandstats\x60,\s+same\s+command\):\s+(\S+)\s+for\s+every`,
			redisbench, s+`(\S+) roundtrips/decision`)
	}
	t.add("tol:25", "benchmarks.md: Redis, prose, the clients' share of the ceiling", bm, `Go\s+clients\s+reach\s+(\S+\s+to\s+\S+)\s+of`,
		redisbench, `^BenchmarkRedisStore\S+\s.*?(\S+) of the pipelined ceiling`)
	oursMedian := `^(?:busy|fresh)\s+ours\s+median\s+(\S+) µs`
	t.add("@tol:40", "benchmarks.md: Redis, prose, µs per call", bm, `costs\s+Redis\s+(\S+\s+to\s+\S+)\s+µs\s+per\s+call`, redisbench, oursMedian)
	for _, s := range [][2]string{
		{"ours", "windowlimit's script"},
		{"ours-denied", "windowlimit's script, a client over its limit (denied)"},
		{"hash", "the previous script (a hash per key)"},
		{"fixed", "fixed window, `INCR` + `PEXPIRE` when new"},
		{"fixed-always", "fixed window, `INCR` + `PEXPIRE` every call (fixed-always)"},
	} {
		d := `^\| ` + q(s[1]) + ` \| `
		t.add("@tol:40", "benchmarks.md: Redis, "+s[0]+", busy, µs per call", bm, d+`(\S+) \|`, redisbench, `^busy\s+`+s[0]+`\s+median\s+(\S+) µs`)
		t.add("@tol:40", "benchmarks.md: Redis, "+s[0]+", fresh, µs per call", bm, d+`\S+ \| [^|]* \| (\S+) \|`, redisbench, `^fresh\s+`+s[0]+`\s+median\s+(\S+) µs`)
	}
	for _, s := range [][2]string{
		{"ours", "windowlimit's script"},
		{"ours-denied", "windowlimit's script, a client over its limit (denied)"},
		{"hash", "the previous script (a hash per key)"},
	} {
		d := `^\| ` + q(s[1]) + ` \| `
		t.add("tol:25", "benchmarks.md: Redis, "+s[0]+", busy, vs fixed", bm, d+`\S+ \| (\S+) /`,
			redisbench, `^busy\s+`+s[0]+`/fixed\s+(\S+)x fixed,`)
		t.add("tol:25", "benchmarks.md: Redis, "+s[0]+", busy, vs fixed-always", bm, d+`\S+ \| \S+ / (\S+) \|`,
			redisbench, `^busy\s+`+s[0]+`/fixed\s+\S+x fixed, (\S+)x fixed-always`)
		t.add("tol:25", "benchmarks.md: Redis, "+s[0]+", fresh, vs fixed", bm, d+`\S+ \| [^|]* \| \S+ \| (\S+) /`,
			redisbench, `^fresh\s+`+s[0]+`/fixed\s+(\S+)x fixed,`)
		t.add("tol:25", "benchmarks.md: Redis, "+s[0]+", fresh, vs fixed-always", bm, d+`\S+ \| [^|]* \| \S+ \| \S+ / (\S+) \|`,
			redisbench, `^fresh\s+`+s[0]+`/fixed\s+\S+x fixed, (\S+)x fixed-always`)
	}
	t.add("@tol:40", "benchmarks.md: Redis, a script that returns at once, µs", bm, `returns\s+at\s+once\s+costs\s+(\S+)\s+µs`,
		redisbench, `^a script that returns at once: (\S+) µs per call`)
	t.add("exact", "benchmarks.md: Redis, a busy key's bytes", bm, `a\s+string\s+of\s+(\d+)\s+bytes\s+with`,
		redisbench, `^one busy key after its run, ours: (\d+) bytes`)
	t.add("exact", "benchmarks.md: Redis, a busy key's sub-windows written", bm, `bytes\s+with\s+(\d+)\s+of\s+11\s+sub-windows`,
		redisbench, `^one busy key after its run, ours: \d+ bytes, (\d+) of 11`)
	t.add("exact", "benchmarks.md: Redis, the hash script's fields", bm, `a\s+hash\s+of\s+(\d+)\s+fields`,
		redisbench, `the hash script's: (\d+) fields`)
	// callgrind: instruction counts, which the machine's load does not
	// move (fresh keys are drawn at random: within 2%).
	for _, s := range [][2]string{
		{"ours", "windowlimit's script"},
		{"ours-denied", "windowlimit's script, a client over its limit (denied)"},
		{"hash", "the previous script (a hash per key)"},
		{"fixed", "fixed window"},
		{"fixed-always", "fixed-always"},
		{"floor", "the floor: `TIME` + `GET` + `SETRANGE` + four integers"},
		{"empty", "a script that returns at once"},
	} {
		d := `^\| ` + q(s[1]) + ` \| `
		within := 2
		if s[0] == "ours-denied" {
			within = 8 // how far the Retry-After walk goes depends on the fill
		}
		tol := func(pct int) string { return "tol:" + strconv.Itoa(pct) }
		t.add(tol(within), "benchmarks.md: callgrind, "+s[0]+", busy, instructions", bm, d+`([\d,]+) \|`,
			redisbench, `^busy\s+`+s[0]+`\s+(\d+) instructions per call`)
		t.add("tol:2", "benchmarks.md: callgrind, "+s[0]+", fresh, instructions", bm, d+`[\d,]+ \| [^|]* \| ([\d,]+) \|`,
			redisbench, `^fresh\s+`+s[0]+`\s+(\d+) instructions per call`)
		if !slices.Contains([]string{"ours", "ours-denied", "hash", "floor"}, s[0]) {
			continue
		}
		calls := `(?s)== instructions per call.*?^`
		t.add(tol(within+1), "benchmarks.md: callgrind, "+s[0]+", busy, vs fixed", bm, d+`[\d,]+ \| (\S+) /`,
			redisbench, calls+`busy\s+`+s[0]+`/fixed\s+(\S+)x fixed,`)
		t.add(tol(within+1), "benchmarks.md: callgrind, "+s[0]+", busy, vs fixed-always", bm, d+`[\d,]+ \| \S+ / (\S+) \|`,
			redisbench, calls+`busy\s+`+s[0]+`/fixed\s+\S+x fixed, (\S+)x`)
		t.add("tol:3", "benchmarks.md: callgrind, "+s[0]+", fresh, vs fixed", bm, d+`[\d,]+ \| [^|]* \| [\d,]+ \| (\S+) /`,
			redisbench, calls+`fresh\s+`+s[0]+`/fixed\s+(\S+)x fixed,`)
		t.add("tol:3", "benchmarks.md: callgrind, "+s[0]+", fresh, vs fixed-always", bm, d+`[\d,]+ \| [^|]* \| [\d,]+ \| \S+ / (\S+) \|`,
			redisbench, calls+`fresh\s+`+s[0]+`/fixed\s+\S+x fixed, (\S+)x`)
	}
	t.add("exact", "benchmarks.md: Redis, MEMORY USAGE, log key", bm, `(\d+)\s+for\s+a\s+\x60log\x60\s+key\s+holding`,
		redisbench, `^rl:login:\{alice@example.com\} \(log, 10 timestamps\): (\d+) bytes`)
	t.add("exact", "benchmarks.md: Redis, MEMORY USAGE, IPv4 key (bench-redis.sh)", bm, `39-byte\s+string\):\s+(\d+)\s+bytes\s+for\s+an\s+IPv4`,
		redisbench, `^rl:api:\{203\.0\.113\.77\}: \d+-byte string, (\d+) bytes`)
	t.add("@tol:25", "README.md: a Redis decision, µs of Redis CPU", "README.md", `one\s+script\s+call\s+of\s+(\S+\s+to\s+\S+)\s+µs`, redisbench, oursMedian)
	t.add("@tol:25", "why.md: a Redis decision, µs of Redis CPU", "docs/why.md", `one\s+script\s+call\s+of\s+(\S+\s+to\s+\S+)\s+µs`, redisbench, oursMedian)
}
