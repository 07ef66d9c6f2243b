package main

import (
	"fmt"
	"strings"
)

// slow adds the Go benchmarks that take minutes, and the bench-*.sh
// scripts' tables (real Caddy and Traefik under wrk, a redis-server and
// its callgrind twin).
func (t *table) slow() {
	t.compiled()
	t.caddy()
	t.traefik()
	t.redis()
	t.lease()
	t.flood()
}

// compiled adds the compiled benchmarks: the core, the Traefik plugin's
// keys, the headers, Caddy's handler, the interpreter's statements and
// the Redis paths.
func (t *table) compiled() {
	core := goTest("core", "", nil, "-run", noTests, "-bench", "Take|BytesPerKey", "-benchtime", "1s", "./shared/ratelimit")
	for _, b := range [][2]string{
		{"TakeHotKey", "Take, one hot key"},
		{"TakeHotKeyParallel", "Take, hot key, parallel"},
		{"TakeDenied", "Take, denied key"},
	} {
		t.add("@tol:25", "benchmarks.md: "+b[0]+", ns/op", bm, `^\| `+q(b[1])+` \| (\S+) ns/op`, core, `^Benchmark`+b[0]+`-\d+\s+\d+\s+(\S+) ns/op`)
		t.add("exact", "benchmarks.md: "+b[0]+", allocs", bm, `^\| `+q(b[1])+` \| \S+ ns/op, (\d+) allocs`, core, `^Benchmark`+b[0]+`-\d+\s.*?(\d+) allocs/op`)
	}
	t.add("@tol:25", "benchmarks.md: TakeMillionKeys, ns/op", bm, `^\| Take over 1M keys, serial / parallel \| (\d+) /`,
		core, `^BenchmarkTakeMillionKeys-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("@tol:25", "benchmarks.md: TakeMillionKeysParallel, ns/op", bm, `^\| Take over 1M keys, serial / parallel \| \d+ / (\d+) ns/op`,
		core, `^BenchmarkTakeMillionKeysParallel-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("exact", "benchmarks.md: TakeMillionKeys(Parallel), allocs", bm, `^\| Take over 1M keys, serial / parallel \| [^|]*, (\d+) allocs`,
		core, `^BenchmarkTakeMillionKeys(?:Parallel)?-\d+\s.*?(\d+) allocs/op`)
	t.add("@tol:25", "benchmarks.md: TakeLog, ns/op", bm, `^\| Take, log \| (\S+) ns/op`, core, `^BenchmarkTakeLog-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("@tol:25", "benchmarks.md: TakeAllThreeRules, ns/op", bm, `^\| three rules together \| (\S+) ns/op`, core, `^BenchmarkTakeAllThreeRules-\d+\s+\d+\s+(\S+) ns/op`)
	perKey := `^BenchmarkBytesPerKey-\d+\s.*?(\S+) B/key`
	t.add("abs:1", "benchmarks.md: heap per tracked key, B", bm, `^\| heap per tracked key [^|]*\| (\d+) B`, core, perKey)
	t.add("abs:1", "caddy.md: heap per tracked key, B", "docs/caddy.md", `sub-windows,\s+(\d+)\s+B\s+a\s+key`, core, perKey)
	t.add("abs:1", "security.md: a key, B", "docs/security.md", `a\s+key\s+costs\s+(\d+)\s+bytes,\s+plus\s+the\s+summary`, core, perKey)
	t.add("range", "security.md: the summary at a full zone, B a key of max_keys", "docs/security.md", `(\d+\s+to\s+\d+)\s+bytes\s+per\s+key\s+of\s+\x60max_keys\x60`,
		core, `^BenchmarkBytesPerKey-\d+\s.*?(\S+) sketch-B/max_key`)
	t.add("@tol:25/1000", "benchmarks.md: TakeFlood, sliding, µs", bm, `full\s+zone\s+[^)]*\)\s+costs\s+(\S+)\s+µs`,
		core, `^BenchmarkTakeFlood/sliding-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("@tol:25/1000", "benchmarks.md: TakeFlood, log, µs", bm, `µs\s+compiled,\s+(\S+)\s+µs\s+for\s+a\s+\x60log\x60`,
		core, `^BenchmarkTakeFlood/log-\d+\s+\d+\s+(\S+) ns/op`)

	clientip := goTest("clientip", "", nil, "-run", noTests, "-bench", "ClientIP|SourceKey", "-benchmem", "./traefikplugin/")
	t.add("@tol:25", "benchmarks.md: ClientIP, remote address, ns", bm, `client\s+IP\s+costs\s+(\d+)\s+ns`,
		clientip, `^BenchmarkClientIP/remote-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("exact", "benchmarks.md: ClientIP, remote address, allocs", bm, `client\s+IP\s+costs\s+\d+\s+ns\s+and\s+(\d+)\s+allocations`,
		clientip, `^BenchmarkClientIP/remote-\d+\s.*?(\d+) allocs/op`)
	t.add("@tol:25", "benchmarks.md: ClientIP, a depth, ns", bm, `address,\s+(\S+)\s+ns\s+with\s+a\s+depth`,
		clientip, `^BenchmarkClientIP/depth\d-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("@tol:25", "benchmarks.md: ClientIP, excluded ranges, ns", bm, `(\d+)\s+ns\s+with\s+excluded\s+ranges`,
		clientip, `^BenchmarkClientIP/excluded-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("@tol:25", "benchmarks.md: ClientIP, IPv6 grouping, ns", bm, `(\d+)\s+ns\s+and\s+\d+\s+allocations\s+with\s+IPv6`,
		clientip, `^BenchmarkClientIP/remote-ipv6subnet-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("exact", "benchmarks.md: ClientIP, IPv6 grouping, allocs", bm, `\d+\s+ns\s+and\s+(\d+)\s+allocations\s+with\s+IPv6`,
		clientip, `^BenchmarkClientIP/remote-ipv6subnet-\d+\s.*?(\d+) allocs/op`)
	httplimit := goTest("httplimit", "", nil, "-run", noTests, "-bench", ".", "-benchmem", "./shared/httplimit/")
	t.add("@tol:25", "benchmarks.md: legacy headers, ns", bm, `legacy\s+headers\s+costs\s+(\d+)\s+ns`,
		httplimit, `^BenchmarkWriteHeaders/legacy-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("exact", "benchmarks.md: legacy headers, allocs", bm, `legacy\s+headers\s+costs\s+\d+\s+ns\s+and\s+(\d+)\s+allocation`,
		httplimit, `^BenchmarkWriteHeaders/legacy-\d+\s.*?(\d+) allocs/op`)
	t.add("@tol:25", "benchmarks.md: both header sets, ns", bm, `both\s+sets\s+(\d+)\s+ns`,
		httplimit, `^BenchmarkWriteHeaders/both-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("exact", "benchmarks.md: both header sets, allocs", bm, `both\s+sets\s+\d+\s+ns\s+and\s+(\d+)`,
		httplimit, `^BenchmarkWriteHeaders/both-\d+\s.*?(\d+) allocs/op`)
	t.add("@tol:25", "benchmarks.md: a complete rejection, ns", bm, `complete\s+rejection\s+(\d+)\s+ns`,
		httplimit, `^BenchmarkReject-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("exact", "benchmarks.md: a complete rejection, allocs", bm, `complete\s+rejection\s+\d+\s+ns\s+and\s+(\d+)`,
		httplimit, `^BenchmarkReject-\d+\s.*?(\d+) allocs/op`)

	// The Caddy handler: each case's median minus the baseline's median,
	// in µs, as the doc computes it (serveHTTPAbove).
	caddyserve := goTest("caddyserve", "", nil, "-run", "X", "-bench", "ServeHTTP$", "-benchmem", "-count", "3", "./caddymodule").
		pipe("each case's median above the baseline's added", serveHTTPAbove)
	for _, c := range [][2]string{
		{"allowed/client_ip", `baseline\x60\s+case,[^:]*:\s+(\S+)\s+µs\s+allowed`},
		{"allowed/headers_none", `(\S+)\s+µs\s+with\s+\x60headers\s+none\x60`},
		{"allowed/header_key", `(\S+)\s+µs\s+keyed\s+by\s+a\s+header`},
		{"allowed/two_zones", `(\S+)\s+µs\s+with\s+two\s+zones`},
		{"denied/no_error_routes", `(\S+)\s+µs\s+for\s+a\s+rejection\s+written\s+directly`},
		{"denied/handle_errors", `(\S+)\s+µs\s+for\s+one\s+returned\s+to\s+\x60handle_errors\x60`},
	} {
		t.add("@tol:50", "benchmarks.md: Caddy handler, "+c[0]+", µs", bm, c[1], caddyserve, `^handler `+c[0]+`: (\S+) µs`)
	}
	t.add("exact", "benchmarks.md: Caddy handler, allowed, allocs", bm, `keyed\s+by\s+client\s+IP\s+\((\d+)\s+allocations`,
		caddyserve, `^handler allowed/client_ip: \S+ µs, (\d+) allocs`)
	t.add("exact", "benchmarks.md: Caddy handler, allowed, bytes", bm, `keyed\s+by\s+client\s+IP\s+\(\d+\s+allocations,\s+(\d+)\s+B`,
		caddyserve, `^handler allowed/client_ip: \S+ µs, \d+ allocs, (\d+) B`)
	t.add("exact", "benchmarks.md: Caddy handler, headers none, allocs", bm, `\x60headers\s+none\x60\s+\((\d+)\s+allocations\)`,
		caddyserve, `^handler allowed/headers_none: \S+ µs, (\d+) allocs`)

	// The Redis site's handler and its go-redis client per request, and
	// one decision through the store over go-redis.
	busykeys := goTest("busykeys", "", nil, "-run", noTests, "-bench", "ServeHTTPRedisBusyKeys", "-benchtime", "100000x", "-count", "3", "./caddymodule")
	for _, c := range [][2]string{
		{"redis", "`redis`: the handler, `store redis`"},
		{"baseline", "`baseline`: the loop alone"},
	} {
		t.add("tol:25", "benchmarks.md: Caddy handler with Redis, "+c[0]+", CPU µs", bm, `^\| `+q(c[1])+` \| (\S+) \|`,
			busykeys, `^BenchmarkServeHTTPRedisBusyKeys/`+c[0]+`-\d+\s+\d+\s+\S+ ns/op\s+(?:\S+ calls/pipeline\s+)?(\S+) cpu-µs/op`)
		t.add("abs:2", "benchmarks.md: Caddy handler with Redis, "+c[0]+", allocs", bm, `^\| `+q(c[1])+` \| \S+ \| (\d+) \|`,
			busykeys, `^BenchmarkServeHTTPRedisBusyKeys/`+c[0]+`-\d+\s.*?(\d+) allocs/op`)
	}
	t.add("tol:25", "benchmarks.md: Caddy handler with Redis, calls per pipeline", bm, `^\| `+q("`redis`: the handler, `store redis`")+` \| \S+ \| \d+ \| \S+ \| (\S+) \|`,
		busykeys, `^BenchmarkServeHTTPRedisBusyKeys/redis-\d+\s+\d+\s+\S+ ns/op\s+(\S+) calls/pipeline`)
	gredisstore := goTest("gredisstore", "", nil, "-run", noTests, "-bench", "RedisStoreGoRedis", "-benchtime", "200000x", "-benchmem", "./caddymodule")
	t.add("abs:1", "benchmarks.md: go-redis store, allocs per decision", bm, `RedisStoreGoRedis.*?allocates\s+(\d+)\s+times`,
		gredisstore, `^BenchmarkRedisStoreGoRedis-\d+\s.*?(\d+) allocs/op`)

	costs := goTest("costs", yaegitest, nil, "-run", noTests, "-bench", "InterpretedCosts", ".")
	for _, b := range [][2]string{
		{"function", `a\s+function\s+call\s+about\s+(\S+)\s+µs`},
		{"method", `a\s+method\s+call\s+about\s+(\S+)\s+µs`},
		{"interface", `through\s+an\s+interface\s+(\S+)\s+µs`},
		{"defer", `\x60defer\x60\s+about\s+(\S+)\s+µs`},
		{"time.Now", `standard\s+library\s+(\S+)\s+µs`},
		{"SplitHostPort", `standard\s+library\s+(\S+)\s+µs`},
	} {
		t.add("@tol:25/1000", "benchmarks.md: yaegi statement, "+b[0]+", µs", bm, b[1], costs, `^BenchmarkInterpretedCosts/`+q(b[0])+`-\d+\s.*?(\S+) ns/stmt`)
	}
	redisinterp := goTest("redisinterp", yaegitest, nil, "-run", noTests, "-bench", "RedisInterpreted", "-benchtime", "30000x", ".")
	t.add("@tol:25", "benchmarks.md: yaegi through Redis, pooled, CPU µs", bm, `decision\s+through\s+shared/resp\s+costs\s+(\d+)\s+µs`,
		redisinterp, `^BenchmarkRedisInterpreted/pooled-\d+\s.*?(\S+) cpu-µs/decision`)
	t.add("@tol:25", "benchmarks.md: yaegi through Redis, pipelined, CPU µs", bm, `pooled\s+and\s+(\d+)\s+µs\s+auto-pipelined`,
		redisinterp, `^BenchmarkRedisInterpreted/pipelined-\d+\s.*?(\S+) cpu-µs/decision`)
	t.add("@tol:25", "benchmarks.md: yaegi through Redis, pooled, decisions/s", bm, `limiter\),\s+([\d,]+)\s+and`,
		redisinterp, `^BenchmarkRedisInterpreted/pooled-\d+\s.*?(\S+) decisions/s`)
	t.add("@tol:25", "benchmarks.md: yaegi through Redis, pipelined, decisions/s", bm, `limiter\),\s+[\d,]+\s+and\s+([\d,]+)\s+decisions/s`,
		redisinterp, `^BenchmarkRedisInterpreted/pipelined-\d+\s.*?(\S+) decisions/s`)

	// count_status in Redis (docs/redis.md): calls exact, the server's
	// CPU and the latency within 25% of the doc's range of runs.
	countstatus := goTest("countstatus", "", nil, "-run", noTests, "-bench", "RedisCountStatus", "-benchtime", "20000x", "-count", "3", "./shared/redisstore")
	for _, b := range [][2]string{
		{"take", "a zone without `count_status`"},
		{"reserved", "`count_status`, the status counts"},
		{"refunded", "`count_status`, refunded"},
	} {
		t.add("exact", "redis.md: count_status, "+b[0]+", script calls", "docs/redis.md", `^\| `+q(b[1])+` \| (\d+) \|`,
			countstatus, `^BenchmarkRedisCountStatus/`+b[0]+`-\d+\s.*?(\S+) calls/req`)
		t.add("@tol:25", "redis.md: count_status, "+b[0]+", Redis CPU µs", "docs/redis.md", `^\| `+q(b[1])+` \| \d+ \| (\S+) µs \|`,
			countstatus, `^BenchmarkRedisCountStatus/`+b[0]+`-\d+\s.*?(\S+) redis-µs/req`)
	}
	t.add("@tol:25/1000", "redis.md: count_status, latency, one call", "docs/redis.md", `sees\s+it\):\s+(\S+)\s+µs\s+per\s+request\s+for\s+one\s+call`,
		countstatus, `^BenchmarkRedisCountStatus/(?:take|reserved)-\d+\s+\d+\s+(\S+) ns/op`)
	t.add("@tol:25/1000", "redis.md: count_status, latency, two calls", "docs/redis.md", `for\s+one\s+call\s+and\s+(\S+)\s+µs\s+for\s+two`,
		countstatus, `^BenchmarkRedisCountStatus/refunded-\d+\s+\d+\s+(\S+) ns/op`)
}

// caddyCol returns a regular expression of bench-caddy.sh's table line of
// label (four columns, on one line), capturing its column i (0: req/s,
// 1: vs base, 2: CPU, 3: efficiency).
func caddyCol(label string, i int) string {
	return fmt.Sprintf(`^%s(?:[ \t]+\S+){%d}[ \t]+(\S+)(?:[ \t]+\S+){%d}[ \t]*$`, q(label), i, 3-i)
}

// caddy adds scripts/bench-caddy.sh's table, as the doc's text block
// shows it.
func (t *table) caddy() {
	columns := [][2]string{{"req/s", "@tol:25"}, {"req/s vs base", "tol:5"}, {"Caddy CPU µs/request", "@tol:25"}, {"efficiency vs base", "tol:5"}}
	// shown is a label as the figure's name gives it: one leading space
	// less.
	shown := func(label string) string { return strings.TrimPrefix(label, " ") }
	caddy := script("caddy", nil, "scripts/bench-caddy.sh")
	for _, label := range []string{"plain Caddy (base)", "rate_limit, all allowed", "  the same, headers none", "rate_limit, denial-heavy (429)"} {
		for i, c := range columns {
			re := caddyCol(label, i)
			t.add(c[1], "benchmarks.md: Caddy, "+shown(label)+", "+c[0], bm, re, caddy, re)
		}
	}
	// The Redis site's table, from a run of its own: the doc's lines
	// after its command.
	caddyredis := script("caddyredis", []string{"WC_BENCH_SITES=redis"}, "scripts/bench-caddy.sh")
	after := `(?s)\$ WC_BENCH_SITES=redis scripts/bench-caddy\.sh\n.*?`
	for _, label := range []string{"plain Caddy, random X-Key (base)", "rate_limit, store redis, X-Key"} {
		for i, c := range columns {
			re := caddyCol(label, i)
			t.add(c[1], "benchmarks.md: Caddy, "+shown(label)+", "+c[0], bm, after+"(?-s)"+re, caddyredis, re)
		}
	}
	redisCPU := `^\s+redis-server CPU µs/request\s+(\S+)$`
	t.add("@tol:25", "benchmarks.md: Caddy, redis-server CPU µs/request", bm, redisCPU, caddyredis, redisCPU)
	t.add("exact", "benchmarks.md: Caddy, keys in Redis", bm, `^\s+\((\d+) keys in Redis`, caddyredis, `^\s+\((\d+) keys in Redis`)
	t.add("@tol:25", "benchmarks.md: Caddy, EVALSHA µs per call", bm, `EVALSHA (\S+) µs per call, \S+ calls per read\)$`,
		caddyredis, `EVALSHA (\S+) µs per call, \S+ calls per read\)$`)
	t.add("@tol:25", "benchmarks.md: Caddy, calls per read", bm, `EVALSHA \S+ µs per call, (\S+) calls per read\)$`,
		caddyredis, `EVALSHA \S+ µs per call, (\S+) calls per read\)$`)
	share := func(label string) string { return `(?s)Share of Caddy CPU.*?^` + q(label) + `[ \t]+(\S+)%$` }
	for _, label := range []string{"rate_limit, all allowed", "  the same, headers none", "rate_limit, denial-heavy (429)"} {
		t.add("tol:40", "benchmarks.md: Caddy, pprof share, "+shown(label), bm, share(label), caddy, share(label))
	}
	t.add("tol:40", "benchmarks.md: Caddy, pprof share, store redis, X-Key", bm, share("rate_limit, store redis, X-Key"),
		caddyredis, share("rate_limit, store redis, X-Key"))
	t.add("tol:5", "benchmarks.md: prose, denial-heavy vs plain", bm, `denial-heavy\s+site\s+serves\s+(\S+)\s+of\s+plain`,
		caddy, caddyCol("rate_limit, denial-heavy (429)", 1))
	t.add("tol:40", "benchmarks.md: prose, the handler's share of Caddy's CPU, %", bm, `handler's\s+own\s+work\s+is\s+about\s+(\d+)%`,
		caddy, `(?s)Share of Caddy CPU.*?^(?:rate_limit, all allowed|  the same, headers none)[ \t]+(\S+)%$`)
	t.add("@tol:25", "benchmarks.md: prose, Caddy's CPU for Redis, µs", bm, `Caddy\s+spends\s+(\S+)\s+µs\s+more\s+CPU`,
		derived(caddyredis, "redis", caddyRedisCPU), `the Redis site: (\S+) µs`)
	t.add("tol:5", "benchmarks.md: prose, all allowed vs plain", bm, `which\s+puts\s+an\s+all-allowed\s+site\s+at\s+(\S+)\s+of\s+plain`,
		caddy, caddyCol("rate_limit, all allowed", 1))
	t.add("tol:5", "benchmarks.md: prose, headers none vs plain", bm, `default\s+headers\s+and\s+(\S+)\s+with\s+\x60headers\s+none\x60`,
		caddy, caddyCol("  the same, headers none", 1))
	t.add("tol:5", "benchmarks.md: prose, the Redis site vs plain", bm, `site's\s+(\S+)\s+of\s+plain\s+pays`,
		caddyredis, caddyCol("rate_limit, store redis, X-Key", 1))
	t.add("@tol:25", "benchmarks.md: prose, redis-server µs", bm, `keyed\s+plain\s+site,\s+redis-server\s+(\S+)\s+µs`, caddyredis, redisCPU)
	t.add("tol:5", "benchmarks.md: prose, Caddy's efficiency with Redis", bm, `Caddy's\s+efficiency\s+\((\S+)\)`,
		caddyredis, caddyCol("rate_limit, store redis, X-Key", 3))
	t.add("tol:5", "README.md: all-allowed Caddy site vs plain", "README.md", `all-allowed\s+Caddy\s+site\s+serves\s+(\S+)\s+of`,
		caddy, caddyCol("rate_limit, all allowed", 1))
	t.add("tol:5", "why.md: all-allowed Caddy site vs plain", "docs/why.md", `all-allowed\s+site\s+serves\s+(\S+)\s+of`,
		caddy, caddyCol("rate_limit, all allowed", 1))
	t.add("tol:5", "why.md: headers none vs plain", "docs/why.md", `requests,\s+(\S+)\s+with\s+\x60headers\s+none\x60`,
		caddy, caddyCol("  the same, headers none", 1))
}
