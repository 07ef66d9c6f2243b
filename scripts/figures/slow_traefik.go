package main

import "strings"

// traefik adds scripts/bench-traefik.sh's table, row by row, its ratios
// in the prose and the README, and its CPU profiles.
func (t *table) traefik() {
	// The profiles go into the work directory, with the outputs.
	traefik := script("traefik", []string{"WL_BENCH_PPROF=$WL_FIGURES_OUT/traefik-pprof"}, "scripts/bench-traefik.sh")
	// Each row: the doc's label, then the script's.
	for _, r := range [][2]string{
		{"plain router", "plain router"},
		{"built-in `rateLimit` (remote address)", "built-in rateLimit (remote address)"},
		{"windowlimit, defaults (remote address, legacy headers)", "windowlimit, defaults (remote address, legacy)"},
		{"built-in, `ipStrategy: {depth: 1}`", "built-in, ipStrategy depth 1"},
		{"windowlimit, `ipStrategy: {depth: 1}`", "windowlimit, ipStrategy depth 1"},
		{"built-in, `ipStrategy.excludedIPs`", "built-in, ipStrategy excludedIPs"},
		{"windowlimit, `ipStrategy.excludedIPs`", "windowlimit, ipStrategy excludedIPs"},
		{"built-in, `ipStrategy.ipv6Subnet: 56`", "built-in, ipStrategy ipv6Subnet 56"},
		{"windowlimit, `ipStrategy.ipv6Subnet: 56`", "windowlimit, ipStrategy ipv6Subnet 56"},
		{"built-in, `requestHeaderName`", "built-in, requestHeaderName"},
		{"windowlimit, `requestHeaderName`", "windowlimit, requestHeaderName"},
		{"built-in, `requestHost`", "built-in, requestHost"},
		{"windowlimit, `requestHost`", "windowlimit, requestHost"},
		{"windowlimit, `headers: ietf`", "windowlimit, headers ietf"},
		{"windowlimit, `headers: both`", "windowlimit, headers both"},
		{"windowlimit, `headers: none`", "windowlimit, headers none"},
		{"windowlimit, `limit: 100000000`", "windowlimit, limit 100000000"},
		{"windowlimit, `window: 87600h`, `limit: 100000000`", "windowlimit, window 87600h, limit 100000000"},
		{"windowlimit, `dryRun`", "windowlimit, dryRun"},
		{"windowlimit, `countStatus`", "windowlimit, countStatus"},
		{"windowlimit, `overrides`", "windowlimit, overrides"},
		{"built-in + `redis`", "built-in + redis"},
		{"windowlimit + `redis` (a hot key: leases)", "windowlimit + redis"},
		{"built-in + `redis`, 1,000 busy keys", "built-in + redis, 1000 keys"},
		{"windowlimit + `redis`, 1,000 busy keys", "windowlimit + redis, 1000 keys"},
		{"the least per-request Redis counter, yaegi, 1,000 keys", "least Redis counter, yaegi, 1000 keys"},
		{"trivial yaegi plugin (the floor)", "trivial yaegi plugin (the floor)"},
		{"least sliding window, yaegi (`scripts/floorplugin`)", "least sliding window, yaegi (its floor)"},
		{"windowlimit, denial-heavy (429)", "windowlimit, denial-heavy (429)"},
	} {
		d, s, label := `^\| `+q(r[0])+` \| `, `^`+q(r[1])+`[ \t]+`, r[1]
		t.add("@tol:65", "benchmarks.md: Traefik, "+label+", req/s", bm, d+`(\S+) \|`, traefik, s+`(\S+)[ \t]+\S+x\s`)
		t.add("@tol:65", "benchmarks.md: Traefik, "+label+", CPU µs", bm, d+`\S+ \| (\S+) \|`, traefik, s+`\S+[ \t]+\S+x[ \t]+(\S+)`)
		if strings.HasPrefix(label, "windowlimit") && !strings.Contains(label, "denial") ||
			strings.HasPrefix(label, "trivial") || strings.HasPrefix(label, "least") {
			t.add("tol:25", "benchmarks.md: Traefik, "+label+", vs built-in", bm, d+`\S+ \| \S+ \| (\S+) \|`,
				traefik, s+`\S+[ \t]+\S+x[ \t]+\S+[ \t]+(\S+)`)
			t.add("tol:25", "benchmarks.md: Traefik, "+label+", by CPU", bm, d+`\S+ \| \S+ \| \S+ \| (\S+) \|`,
				traefik, s+`\S+[ \t]+\S+x[ \t]+\S+[ \t]+\S+[ \t]+(\S+)`)
		}
	}
	// The prose and the README: the same run's ratios.
	vsRef := func(label string) string { return `^` + q(label) + `[ \t]+\S+[ \t]+\S+x[ \t]+\S+[ \t]+(\S+)` }
	byCPU := func(label string) string { return `^` + q(label) + `[ \t]+\S+[ \t]+\S+x[ \t]+\S+[ \t]+\S+[ \t]+(\S+)` }
	const (
		defaults = "windowlimit, defaults (remote address, legacy)"
		depth1   = "windowlimit, ipStrategy depth 1"
		trivial  = "trivial yaegi plugin (the floor)"
		least    = "least sliding window, yaegi (its floor)"
	)
	t.add("tol:25", "benchmarks.md: prose, countStatus vs built-in", bm, `(\S+)\s+with\s+\x60countStatus\x60\s+and\s+\S+\s+with\s+\x60overrides\x60`,
		traefik, vsRef("windowlimit, countStatus"))
	t.add("tol:25", "benchmarks.md: prose, overrides vs built-in", bm, `\S+\s+with\s+\x60countStatus\x60\s+and\s+(\S+)\s+with\s+\x60overrides\x60`,
		traefik, vsRef("windowlimit, overrides"))
	t.add("tol:25", "benchmarks.md: prose, redis vs built-in", bm, `admitted\s+from\s+a\s+lease,\s+(\S+)\s+of\s+the\s+built-in`,
		traefik, vsRef("windowlimit + redis"))
	t.add("tol:25", "benchmarks.md: prose, trivial plugin vs built-in", bm, `trivial\s+yaegi\s+plugin\s+serves\s+(\S+)\s+of`, traefik, vsRef(trivial))
	t.add("tol:25", "benchmarks.md: prose, least window vs built-in", bm, `key\s+but\s+the\s+remote\s+address\)\s+(\S+),`, traefik, vsRef(least))
	t.add("tol:25", "benchmarks.md: prose, least window by CPU", bm, `remote\s+address\)\s+\S+,\s+(\S+)\s+by\s+CPU`, traefik, byCPU(least))
	t.add("tol:25", "README.md: Traefik plugin, defaults, vs built-in", "README.md", `Traefik\s+plugin\s+serves\s+(\S+)\s+of`, traefik, vsRef(defaults))
	t.add("tol:25", "why.md: Traefik plugin, defaults, vs built-in", "docs/why.md", `serves[ \t]+(\S+)[ \t]+of[ \t]+the[ \t]+built-in's[ \t]+requests[ \t]+with`,
		traefik, vsRef(defaults))
	t.add("tol:25", "why.md: Traefik plugin, depth 1, vs built-in", "docs/why.md", `defaults\s+and\s+(\S+)\s+behind\s+a\s+load\s+balancer`, traefik, vsRef(depth1))
	t.add("tol:25", "why.md: Traefik plugin, defaults, by CPU", "docs/why.md", `same\s+source;\s+(\S+)\s+and\s+\S+\s+by\s+CPU`, traefik, byCPU(defaults))
	t.add("tol:25", "why.md: Traefik plugin, depth 1, by CPU", "docs/why.md", `same\s+source;\s+\S+\s+and\s+(\S+)\s+by\s+CPU`, traefik, byCPU(depth1))
	t.add("tol:25", "why.md: trivial plugin vs built-in", "docs/why.md", `trivial\s+yaegi\s+plugin\s+serves\s+(\S+),`, traefik, vsRef(trivial))
	t.add("tol:25", "why.md: least window vs built-in", "docs/why.md", `yaegi\s+plugin\s+can\s+be\s+(\S+)\s+\(`, traefik, vsRef(least))
	// The prose's spread over the in-memory configurations but
	// countStatus and overrides, from the same table.
	spread := derived(traefik, "spread", traefikSpread)
	t.add("tol:25", "benchmarks.md: prose, in memory vs built-in, least", bm, `serves\s+(\S+)\s+to\s+\S+\s+of\s+the\s+requests\s+of\s+the\s+built-in`,
		spread, `vs built-in (\S+) to`)
	t.add("tol:25", "benchmarks.md: prose, in memory vs built-in, most", bm, `serves\s+\S+\s+to\s+(\S+)\s+of\s+the\s+requests\s+of\s+the\s+built-in`,
		spread, `vs built-in \S+ to (\S+),`)
	t.add("tol:25", "benchmarks.md: prose, in memory by CPU, least", bm, `\x60overrides\x60\s+\((\S+)\s+to\s+\S+\s+by\s+CPU\)`, spread, `by CPU (\S+) to`)
	t.add("tol:25", "benchmarks.md: prose, in memory by CPU, most", bm, `\x60overrides\x60\s+\(\S+\s+to\s+(\S+)\s+by\s+CPU\)`, spread, `by CPU \S+ to (\S+)$`)
	// What the interpreter costs Traefik's CPU, as a multiple of the
	// plain router's: within the 15% the doc states.
	vsPlain := derived(traefik, "vsplain", traefikVsPlain)
	for _, r := range [][2]string{
		{`almost\s+nothing\s+cost\s+Traefik\s+(\S+)\s+times`, "trivial yaegi plugin"},
		{`the\s+least\s+sliding\s+window\s+(\S+)\s+times`, "least sliding window, yaegi"},
		{`windowlimit\s+with\s+its\s+defaults\s+(\S+)\s+times`, "windowlimit, defaults"},
		{`leases\)\s+(\S+)\s+times`, "windowlimit + redis"},
	} {
		t.add("tol:15", "benchmarks.md: prose, "+r[1]+", CPU vs plain", bm, r[0], vsPlain, `^`+q(r[1])+`: (\S+) times`)
	}
	// The CPU profiles (WL_BENCH_PPROF): per request, in the plugin, in
	// allocating and in GC marking, windowlimit then the trivial plugin.
	// {n} is a number the figure reads, {x} one it skips.
	n := strings.NewReplacer("{n}", `([\d.]+)`, "{x}", `[\d.]+`).Replace
	for _, r := range [][3]string{
		{"windowlimit, in the plugin", `in\s+this\s+run\s+{n},\s+{x}\s+and\s+{x}\s+µs\s+for\s+windowlimit`, `^plugin\s+{x}\s+{x}\s+{n}\s`},
		{"windowlimit, allocating", `in\s+this\s+run\s+{x},\s+{n}\s+and\s+{x}\s+µs\s+for\s+windowlimit`, `^plugin(?:\s+{x}){3}\s+{n}\s`},
		{"windowlimit, GC marking", `in\s+this\s+run\s+{x},\s+{x}\s+and\s+{n}\s+µs\s+for\s+windowlimit`, `^plugin(?:\s+{x}){4}\s+{n}`},
		{"trivial plugin, in the plugin", `against\s+{n},\s+{x}\s+and\s+{x}\s+for\s+the\s+trivial`, `^trivial\s+{x}\s+{x}\s+{n}\s`},
		{"trivial plugin, allocating", `against\s+{x},\s+{n}\s+and\s+{x}\s+for\s+the\s+trivial`, `^trivial(?:\s+{x}){3}\s+{n}\s`},
		{"trivial plugin, GC marking", `against\s+{x},\s+{x}\s+and\s+{n}\s+for\s+the\s+trivial`, `^trivial(?:\s+{x}){4}\s+{n}`},
	} {
		t.add("@tol:40", "benchmarks.md: pprof, "+r[0]+", µs", bm, n(r[1]), traefik, n(r[2]))
	}
}
