package main

import "strings"

// full adds the ranges over runs, the allocations and the Go benchmarks
// of seconds (the default mode).
func (t *table) full() {
	flood := floodCmd
	t.add("range", "security.md: flood, new clients served, 1 request a key", "docs/security.md", `one request each \| \d+ of 80 \| (\S+) \|`,
		flood, `^\s*flood_test.go:\d+: 1 requests per key: slipped \d+/80;.*\((\d+)%\)`)
	t.add("range", "security.md: flood, new clients served, 5 a key", "docs/security.md", `limit first \| \d+ of 80 \| (\S+) \|`,
		flood, `^\s*flood_test.go:\d+: 5 requests per key: slipped \d+/80;.*\((\d+)%\)`)
	t.add("range", "security.md: moderate flood, new clients, 1 a key", "docs/security.md", `one request each \| \d+ of 1000 \| (\S+) \|`,
		flood, `^\s*flood_test.go:\d+: 1 requests per key: slipped \d+/1000;.*\((\d+)%\)`)
	t.add("range", "security.md: moderate flood, new clients, 5 a key", "docs/security.md", `limit first \| \d+ of 1000 \| (\S+) \|`,
		flood, `^\s*flood_test.go:\d+: 5 requests per key: slipped \d+/1000;.*\((\d+)%\)`)

	reset := resetCmd
	t.add("range", "redis.md: an operator's reset, admitted", "docs/redis.md", `operator's\s+reset\s+admitting\s+(\S+\s+to\s+\S+)\s+\(`,
		reset, `admin reset .*admitted (\d+) of 8000`)
	t.add("range", "redis.md: an operator's reset, units short of the limit", "docs/redis.md", `fresh\s+budget\s+was\s+(\S+\s+to\s+\S+)\s+units\s+short`,
		derived(reset, "short", resetShort), `admin reset: (\d+) short`)
	t.add("range", "redis.md: a lost key, over the limit", "docs/redis.md", `lost\s+key\s+\S+\s+to\s+\S+\s+\((\S+\s+to\s+\S+)\s+over\)`,
		reset, `lost reset .*\((\d+) over\)`)

	// The Traefik plugin's script calls: real time, so the sub-windows
	// its 2,000 requests span vary.
	leasecalls := goTest("leasecalls", "", nil, "-count=1", "-run", "TestRedisLeaseCalls", "-v", "./traefikplugin")
	t.add("range", "traefik.md: 2,000 requests, script calls, lease off", "docs/traefik.md", `one\s+key\s+cost\s+(\S+\s+to\s+\S+)\s+script\s+calls\s+with\s+\x60lease:\s+off\x60`,
		leasecalls, `2000 requests on one key: (\d+) script calls with lease off`)
	t.add("range", "traefik.md: 2,000 requests, script calls, lease auto", "docs/traefik.md", `\x60lease:\s+off\x60\s+and\s+(\S+\s+to\s+\S+)\s+with\s*\x60auto\x60`,
		leasecalls, `with lease off, (\d+) with lease auto`)

	// Allocations under yaegi: within 5 of the doc's (see
	// docs/benchmarks.md).
	for _, c := range [][2]string{
		{"default", "defaults (remote address, legacy headers, limit 60000)"},
		{"ipStrategy-depth-1", "`ipStrategy: {depth: 1}`"},
		{"ipStrategy-excludedIPs", "`ipStrategy.excludedIPs` (two ranges, one entry excluded)"},
		{"ipStrategy-ipv6Subnet-56", "`ipStrategy.ipv6Subnet: 56`, an IPv6 client"},
		{"requestHeaderName", "`requestHeaderName`"},
		{"requestHost", "`requestHost`"},
		{"headers-ietf", "`headers: ietf`"},
		{"headers-both", "`headers: both`"},
		{"headers-none", "`headers: none`"},
		{"limit-100000000", "`limit: 100000000`"},
		{"window-87600h", "`window: 87600h`"},
		{"dryRun", "`dryRun`"},
		{"countStatus", "`countStatus`"},
		{"overrides", "`overrides`"},
	} {
		t.add("abs:5", "benchmarks.md: yaegi allocations, "+c[0], bm, `^\| `+q(c[1])+` \| (\S+) \|`,
			configsCmd, `^BenchmarkPluginConfigs/`+q(c[0])+`-\d+\s.*?(\d+) allocs/op`)
	}

	// The eviction policies: a slow measurement (about 20 s), which the
	// test asserts too; the doc's sentence names what each policy
	// admitted.
	sizingEnv := []string{"WINDOWLIMIT_REDIS_SIZING=1"}
	evict := goTest("evict", "", sizingEnv, "-count=1", "-v", "-run", "TestRedisEvictionPolicies", "./shared/redisstore")
	victim := func(policy string) string {
		return `^\s*sizing_test.go:\d+: ` + q(policy) + `\s+victim admitted\s+(\d+) of 10`
	}
	for _, p := range [][2]string{
		{"noeviction", `(\d+)\s+times\s+under\s+\x60noeviction\x60`},
		{"allkeys-lru", `admitted\s+again\s+(\d+)\s+times\s+of\s+10,\s+its\s+full\s+budget,\s+under\s+\x60allkeys-lru\x60`},
		{"volatile-lru", `admitted\s+again\s+(\d+)\s+times\s+of\s+10,\s+its\s+full\s+budget,\s+under\s+\x60allkeys-lru\x60\s+and\s+\x60volatile-lru\x60`},
		{"allkeys-lfu", `(\d+)\s+times\s+under\s+\x60allkeys-lfu\x60`},
		{"volatile-lfu", `(\d+)\s+times\s+under\s+\x60allkeys-lfu\x60\s+and\s+\x60volatile-lfu\x60`},
	} {
		t.add("exact", "redis.md: maxmemory-policy "+p[0]+", victim admitted", "docs/redis.md", p[1], evict, victim(p[0]))
	}
	for _, policy := range []string{"volatile-ttl", "allkeys-random"} {
		t.add("range", "redis.md: maxmemory-policy "+policy+", victim admitted", "docs/redis.md", `(\d+\s+or\s+\d+)\s+times\s+under\s+\x60volatile-ttl\x60`,
			evict, victim(policy))
	}

	// Redis's used_memory per key (docs/redis.md's sizing table): within
	// 8 B, as the doc says.
	sizing := goTest("sizing", "", sizingEnv, "-count=1", "-v", "-run", "TestRedisSizing", "./shared/redisstore")
	const (
		ipv4   = "sliding, 10 sub-windows, IPv4, one request / every sub-window written / 50 in every sub-window"
		ipv6   = "sliding, 10 sub-windows, IPv6 /64, one request / every sub-window written / 50 in every sub-window"
		apiKey = "sliding, 10 sub-windows, 40-byte API key, every sub-window written"
		log    = "log, 10 requests, IPv4 / IPv6 /64"
	)
	for _, s := range [][3]string{
		{`(\d+) / \d+ / \d+`, ipv4, "sliding 10 sub-windows, IPv4, 1 request"},
		{`\d+ / (\d+) / \d+`, ipv4, "sliding 10 sub-windows, IPv4, every sub-window"},
		{`\d+ / \d+ / (\d+)`, ipv4, "sliding 10 sub-windows, IPv4, 50 in every sub-window"},
		{`(\d+) / \d+ / \d+`, ipv6, "sliding 10 sub-windows, IPv6 /64, 1 request"},
		{`\d+ / (\d+) / \d+`, ipv6, "sliding 10 sub-windows, IPv6 /64, every sub-window"},
		{`\d+ / \d+ / (\d+)`, ipv6, "sliding 10 sub-windows, IPv6 /64, 50 in every sub-window"},
		{`(\d+)`, apiKey, "sliding 10 sub-windows, 40-byte API key, every sub-window"},
		{`(\d+) / \d+`, log, "log, IPv4, 10 entries"},
		{`\d+ / (\d+)`, log, "log, IPv6 /64, 10 entries"},
	} {
		t.add("abs:8", "redis.md: sizing, "+s[2], "docs/redis.md", `^\| `+q(s[1])+` \| `+s[0]+` \|`,
			sizing, `sizing_test.go:\d+: `+q(s[2])+`\s+MEMORY USAGE.*= (\d+) B/key`)
	}
	t.add("abs:8", "redis.md: sizing example, bytes a key", "docs/redis.md", `about\s+1\.1\s+M\s+keys\s+x\s+(\d+)\s+B`,
		sizing, `IPv4, 50 in every sub-window\s+MEMORY USAGE.*= (\d+) B/key`)
	t.add("tol:5", "redis.md: sizing example, MB", "docs/redis.md", `x\s+2,\s+about\s+(\d+)\s+MB`,
		derived(sizing, "example", sizingExample), ` x 2 = (\d+) MB`)

	// The chaos tests (docs/redis.md): Redis killed, restarted, asleep.
	chaos := goTest("chaos", "", nil, "-race", "-count=1", "-run", "Chaos", "-v", "./shared/redisstore").pipe("Go's durations in seconds", goDurSeconds)
	t.add("range", "redis.md: chaos, requests that tried the dead Redis", "docs/redis.md", `no\s+denial;\s+(\d+\s+to\s+\d+)\s+requests`,
		chaos, `chaos_test.go:\d+: \d+ calls;.*?; (\d+) tried dead Redis`)
	t.add("@tol:25/0.001", "redis.md: chaos, slowest request during the outage, ms", "docs/redis.md", `slowest\s+request\s+during\s+the\s+outage\s+(\S+)\s+ms`,
		chaos, `chaos_test.go:\d+: \d+ calls;.*?during outage (\S+)s,`)
	t.add("@tol:25", "redis.md: chaos, the breaker closed after the restart, s", "docs/redis.md", `breaker\s+closed\s+(\S+\s+to\s+\S+)\s+s\s+after\s+the\s+restart`,
		chaos, `chaos_test.go:\d+: \d+ calls;.*?recovered (\S+)s after restart`)
	t.add("exact", "redis.md: chaos, requests timed out while Redis slept", "docs/redis.md", `SLEEP\s+1\x60\s+\(read\s+timeout\s+100\s+ms\)\s+\|\s+(\d+)\s+requests`,
		chaos, `slowest request while Redis slept: .*?; (\d+) timed out`)
	t.add("@max", "redis.md: chaos, closed after Redis woke, s", "docs/redis.md", `closed\s+within\s+(\S+)\s+s\s+of\s+Redis\s+waking`,
		chaos, `slowest request while Redis slept: .*?closed (\S+)s after it woke`)
	recovery := goTest("recovery", "", nil, "-count=1", "-run", "TestRedisRecoversAfterLongOutage", "-v", "./caddymodule").pipe("Go's durations in seconds", goDurSeconds)
	t.add("@range/0.001", "redis.md: go-redis, breaker closed after a long outage, ms", "docs/redis.md", `the\s+breaker\s+closes\s+(\S+)\s+ms\s+after\s+the\s+restart`,
		recovery, `breaker closed (\S+)s after Redis restarted`)

	// Memory figures of docs/caddy.md, docs/security.md and
	// docs/redis.md.
	sketchmem := goTest("sketchmem", "", nil, "-count=1", "-run", "TestSketchMemory", "-v", "./shared/ratelimit")
	t.add("exact", "caddy.md: the summary of evicted keys, B a key of max_keys", "docs/caddy.md", `evicted\s+keys\s+at\s+(\S+)\s+B\s+a\s+key`,
		sketchmem, `max_keys 100000: .*?: (\S+) bytes per key`)
	t.add("range", "security.md: the summary, B a key of max_keys", "docs/security.md", `(\d+\s+to\s+\d+)\s+bytes\s+per\s+key\s+of\s+\x60max_keys\x60`,
		sketchmem, `max_keys 100000: .*?: (\S+) bytes per key`)
	oom := goTest("oom", "", nil, "-race", "-count=1", "-run", "TestRedisOOM", "-v", "./shared/redisstore")
	t.add("tol:10", "redis.md: OOM, fresh keys that fill 3 MB", "docs/redis.md", `fills\s+a\s+3\s+MB\s+Redis\s+with\s+about\s+([\d,]+)`,
		oom, `redis over maxmemory after (\d+) fresh keys`)
	t.add("exact", "redis.md: OOM, the client at its limit admitted (of 20)", "docs/redis.md", `at\s+its\s+limit\s+is\s+then\s+admitted\s+(\d+)\s+times\s+of\s+20`,
		oom, `the client at its limit admitted (\d+) times of 20`)

	t.interpreter()
}

// interpreter adds the interpreter's allocations and times (the default
// mode).
func (t *table) interpreter() {
	coreyaegi := goTest("coreyaegi", yaegitest, nil, "-run", noTests, "-bench", "TakeInterpreted", "-benchtime", "20000x", ".")
	t.add("@tol:25", "benchmarks.md: TakeAt under yaegi, µs", bm, `^\| under yaegi, TakeAt [^|]*\| (\S+) µs`,
		coreyaegi, `^BenchmarkTakeInterpreted/TakeAt-\d+\s.*?(\S+) µs/op`)
	t.add("abs:1", "benchmarks.md: TakeAt under yaegi, allocs", bm, `^\| under yaegi, TakeAt [^|]*\| \S+ µs, (\d+) interp`,
		coreyaegi, `^BenchmarkTakeInterpreted/TakeAt-\d+\s.*?(\S+) interp-allocs/op`)
	t.add("@tol:25", "benchmarks.md: naive window under yaegi, µs", bm, `^\| under yaegi, naive [^|]*\| (\S+) µs`,
		coreyaegi, `^BenchmarkTakeInterpreted/naive-\d+\s.*?(\S+) µs/op`)
	t.add("abs:1", "benchmarks.md: naive window under yaegi, allocs", bm, `^\| under yaegi, naive [^|]*\| \S+ µs, (\d+) allocs`,
		coreyaegi, `^BenchmarkTakeInterpreted/naive-\d+\s.*?(\S+) interp-allocs/op`)

	// The interpreter's allocations per request, and its times.
	perreq := goTest("perreq", yaegitest, nil, "-run", noTests, "-bench", "PluginInterpreted|^BenchmarkPieces$|TrivialPlugin|TakeInterpreted", "-benchtime", "20000x", "-count", "2", ".")
	// second skips the first of two runs of a benchmark (a denied run's
	// log lines come between its name and its figures).
	second := func(bench string) string {
		return `(?s)^Benchmark` + q(bench) + `-\d+\s.*?allocs/op.*?^Benchmark` + q(bench) + `-\d+\s.*?`
	}
	allocs := func(bench string) string { return `(?s)^Benchmark` + q(bench) + `-\d+\s.*?(\d+) allocs/op` }
	for _, b := range [][3]string{
		{"PluginInterpreted/allowed", "range", "allowed request, 1024 IPv4 clients"},
		{"PluginInterpreted/allowed-ipv6", "range", "allowed request, 1024 IPv6 clients (grouped by /64)"},
		{"PluginInterpreted/denied", "range", "rejected request (with its log line, at most one a second)"},
		{"PluginInterpreted/allowed-limit-60000", "exact", "limit 60000 (the larger table)"},
		{"TrivialPlugin/floor.NewWindow", "exact", "the least sliding window (`scripts/floorplugin`)"},
		{"TrivialPlugin/floor.NewCounter", "exact", "a trivial middleware: a mutex, a map increment, one header"},
		{"TrivialPlugin/floor.NewPassThrough", "exact", "the cheapest possible yaegi middleware (call the next handler)"},
	} {
		t.add("@tol:40", "benchmarks.md: yaegi per request, "+b[0]+", µs", bm, `^\| `+q(b[2])+` \| (\S+) µs \|`, perreq, second(b[0])+`(\S+) µs/op`)
		t.add(b[1], "benchmarks.md: yaegi per request, "+b[0]+", allocs", bm, `^\| `+q(b[2])+` \| \S+ µs \| (\S+) \|`, perreq, allocs(b[0]))
	}
	const (
		takeAt   = "of these, the core's decision (`TakeAt`), allowed / denied"
		reserved = "`countStatus`'s reservation (`TakeReservedAt`), and with its refund (`RefundAt`)"
	)
	pieces := [][3]string{
		{"Pieces/TakeAt-allowed", `(X)\s/\sX`, takeAt},
		{"Pieces/TakeAt-denied", `X\s/\s(X)`, takeAt},
		{"Pieces/TakeReservedAt", `(X)\s/\sX`, reserved},
		{"Pieces/TakeReservedAt+RefundAt", `X\s/\s(X)`, reserved},
	}
	for _, p := range pieces {
		col := strings.ReplaceAll(p[1], "X", `\S+`)
		t.add("@tol:40/1000", "benchmarks.md: yaegi per request, "+p[0]+", µs", bm, `^\| `+q(p[2])+` \| `+col+` µs \|`, perreq, second(p[0])+`(\S+) ns/piece`)
	}
	for _, p := range pieces {
		col := strings.ReplaceAll(p[1], "X", `\d+`)
		t.add("abs:3", "benchmarks.md: yaegi per request, "+p[0]+", allocs", bm, `^\| `+q(p[2])+` \| [^|]* \| `+col+` \|`,
			perreq, `^Benchmark`+q(p[0])+`-\d+\s.*?(\d+) allocs/op`)
	}
	t.add("exact", "benchmarks.md: prose, an allowed request's allocations", bm, `Of\s+an\s+allowed\s+request's\s+(\d+)\s+allocations`,
		perreq, `^BenchmarkPluginInterpreted/allowed-limit-60000-\d+\s.*?(\d+) allocs/op`)
	t.add("exact", "benchmarks.md: prose, the core's decision's allocations", bm, `the\s+core's\s+decision\s+makes\s+(\d+)`,
		perreq, `^BenchmarkPieces/TakeAt-allowed-\d+\s.*?(\d+) allocs/op`)
	t.add("exact", "benchmarks.md: prose, the call into the plugin", bm, `the\s+call\s+into\s+the\s+plugin\s+(\d+);`,
		perreq, `^BenchmarkTrivialPlugin/floor.NewPassThrough-\d+\s.*?(\d+) allocs/op`)
	t.add("exact", "benchmarks.md: prose, reading the clock", bm, `reading\s+the\s+clock\s+makes\s+(\d+)\s+and`,
		perreq, `^BenchmarkPieces/time.Now\(\)-\d+\s.*?(\d+) allocs/op`)
	t.add("exact", "benchmarks.md: prose, the remote address", bm, `and\s+the\s+remote\s+address\s+(\d+)\s+\(\x60Pieces`,
		perreq, `^BenchmarkPieces/remote-addr-key-\d+\s.*?(\d+) allocs/op`)
	t.add("exact", "benchmarks.md: prose, countStatus's reserve and refund", bm, `written\s+out\):\s+(\d+)\s+\(\x60-bench\s+Pieces\x60\)`,
		perreq, `^BenchmarkPieces/TakeReservedAt\+RefundAt-\d+\s.*?(\d+) allocs/op`)
	for _, b := range [][2]string{
		{"NewPassThrough", `next\s+handler\s+makes\s+(\d+),`},
		{"NewCounter", `the\s+trivial\s+plugin\s+(\d+),\s+the\s+least`},
		{"NewWindow", `the\s+least\s+sliding\s+window\s+(\d+)\s+\(exact`},
	} {
		t.add("exact", "benchmarks.md: TrivialPlugin, "+b[0]+", allocs", bm, b[1], perreq, `^BenchmarkTrivialPlugin/floor.`+b[0]+`-\d+\s.*?(\d+) allocs/op`)
	}
	t.add("abs:5", "benchmarks.md: prose, countStatus's allocations", bm, `\(\x60-bench\s+Pieces\x60\)\s+of\s+its\s+(\d+)\s+allocations`,
		configsCmd, `^BenchmarkPluginConfigs/countStatus-\d+\s.*?(\d+) allocs/op`)

	// The Redis path under yaegi: the layers' CPU (a range of runs,
	// widened by the tolerance) and their allocations (within 3, the
	// 1,000 keys' within 8, as the doc says).
	layers := goTest("layers", yaegitest, nil, "-run", noTests, "-bench", "RedisLayersInterpreted", "-benchtime", "3000x", "-count", "2", ".")
	for _, b := range [][2]string{
		{"client-MODE", "client (`EvalSha`)"},
		{"prepared-MODE", "client, prepared (`resp.EvalPrepared`)"},
		{"store-MODE", "store (`redisstore.Store.Take`)"},
		{"guard-MODE", "guard (`guard.Guard.Take`)"},
		{"remote-MODE", "the plugin's call (`redisstore.TakeKey` with the store's `KeyCall`: guard, store and client in one interpreted call)"},
		{"remote-pipelined-compiled", "the plugin's call compiled, for reference (the fake Redis, the system calls, the pipeline's goroutines) | – | –"},
		{"plugin-pipelined-limit-60000", "plugin (`ServeHTTP`, limit 60000, `lease off`, `onStoreError deny`) | – | –"},
		{"plugin-pipelined-1000-keys-lease-auto", "plugin, 1,000 keys from a header, `lease auto` | – | –"},
		{"plugin-pipelined-1000-keys-lease-off", "plugin, 1,000 keys from a header, `lease off` | – | –"},
	} {
		for _, pm := range []string{"pooled", "pipelined"} {
			// The pipelined columns come after the pooled two, but for
			// a pipelined-only row (no MODE), whose label holds its
			// empty pooled cells.
			cols := ""
			if !strings.HasSuffix(b[0], "-MODE") {
				if pm == "pooled" {
					continue
				}
			} else if pm == "pipelined" {
				cols = `[^|]*\|[^|]*\|`
			}
			name := strings.Replace(b[0], "-MODE", "-"+pm, 1)
			within := "abs:3"
			if strings.Contains(name, "1000-keys") {
				within = "abs:8"
			}
			label := `^\| ` + q(b[1]) + ` \|` + cols
			t.add("@tol:25", "benchmarks.md: Redis layers, "+name+", CPU µs", bm, label+` (\S+) \|`,
				layers, `^BenchmarkRedisLayersInterpreted/`+q(name)+`-\d+\s.*?(\S+) cpu-µs/op`)
			t.add(within, "benchmarks.md: Redis layers, "+name+", allocs", bm, label+` [^|]* \| (\S+) \|`,
				layers, `^BenchmarkRedisLayersInterpreted/`+q(name)+`-\d+\s.*?(\d+) allocs/op`)
		}
	}
	// A cold key with leases on and off (docs/traefik.md): the layers'
	// rows.
	for _, l := range [][2]string{
		{"auto", `look-up\s+in\s+the\s+lease\s+table\s+\(on\s+1,000\s+busy\s+keys,\s+(\d+)`},
		{"off", `interpreter\s+allocations\s+a\s+request\s+against\s+(\d+)\s+with\s+\x60lease:\s+off\x60`},
	} {
		t.add("abs:8", "traefik.md: a cold key's allocations, lease "+l[0], "docs/traefik.md", l[1],
			layers, `^BenchmarkRedisLayersInterpreted/plugin-pipelined-1000-keys-lease-`+l[0]+`-\d+\s.*?(\d+) allocs/op`)
	}
}
