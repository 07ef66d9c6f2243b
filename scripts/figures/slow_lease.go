package main

import "strings"

// lease adds scripts/bench-lease.sh: the four parts' tables and the
// summary.
func (t *table) lease() {
	lease := script("lease", nil, "scripts/bench-lease.sh")
	for _, r := range [][2]string{
		{"3 Caddy, in memory (no store)", "in memory (no store)"},
		{"3 Caddy, `store redis`, `lease auto`", "store redis, lease auto"},
		{"3 Caddy, `store redis`, `lease off`", "store redis, lease off"},
	} {
		d, s, label := `^\| `+q(r[0])+` \| `, `(?s)^1\. One hot key.*?^`+q(r[1]), r[1]
		name := "benchmarks.md: leases, hot key, " + label
		t.add("@tol:25", name+", req/s", bm, d+`([\d,]+) \|`, lease, s+`\s+(\S+)`)
		t.add("tol:5", name+", vs memory", bm, d+`[\d,]+ \| (\S+) \|`, lease, s+`\s+\S+\s+(\S+)`)
		if !strings.HasPrefix(label, "in") {
			t.add("tol:25", name+", calls per request", bm, d+`[\d,]+ \| \S+ \| (\S+) \|`, lease, s+`(?:\s+\S+){2}\s+(\S+)`)
		}
		t.add("@tol:25", name+", CPU µs", bm, d+`[\d,]+ \| \S+ \| \S+ \| (\S+) \|`, lease, s+`(?:\s+\S+){3}\s+(\S+)`)
		t.add("tol:5", name+", by CPU", bm, d+`[\d,]+ \| \S+ \| \S+ \| \S+ \| (\S+) \|`, lease, s+`(?:\s+\S+){4}\s+(\S+)`)
	}
	t.add("@tol:25", "benchmarks.md: leases, strict, the limit", bm, `^\| \x60strict\x60, limit ([\d,]+) per 1 s`,
		lease, `^2\. One hot key, algorithm strict, limit (\d+) per`)
	for _, lm := range []string{"auto", "off"} {
		d := `^` + q("| 3 Caddy, `lease "+lm+"` |") + ` `
		s := `(?s)^2\. One hot key.*?^store redis, lease ` + lm
		cold := `(?s)^3\. 1000 cold keys.*?^store redis, lease ` + lm
		strict, coldName := "benchmarks.md: leases, strict, lease "+lm, "benchmarks.md: leases, cold keys, lease "+lm
		t.add("@tol:25", strict+", offered req/s", bm, d+`([\d,]+) \|`, lease, s+`\s+(\S+)`)
		t.add("@tol:25", strict+", admitted", bm, d+`[\d,]+ \| ([\d,]+) \|`, lease, s+`(?:\s+\S+){2}\s+(\S+)`)
		t.add("@tol:25", strict+", most in 1 s", bm, d+`[\d,]+ \| [\d,]+ \| ([\d,]+) \|`, lease, s+`(?:\s+\S+){3}\s+(\S+)`)
		t.add("tol:40", strict+", calls per request", bm, d+`[\d,]+ \| [\d,]+ \| [\d,]+ \| (\S+) \|`, lease, s+`(?:\s+\S+){4}\s+(\S+)`)
		t.add("@tol:25", coldName+", req/s", bm, d+`([\d,]+) \| \S+ \| \S+ \|$`, lease, cold+`\s+(\S+)`)
		t.add("tol:25", coldName+", calls per request", bm, d+`[\d,]+ \| (\S+) \| \S+ \|$`, lease, cold+`\s+\S+\s+(\S+)`)
		t.add("@tol:25", coldName+", CPU µs", bm, d+`[\d,]+ \| \S+ \| (\S+) \|$`, lease, cold+`(?:\s+\S+){2}\s+(\S+)`)
	}
	t.add("tol:5", "benchmarks.md: leases, strict, admitted / limit, lease auto", bm, `over\s+the\s+limit:\s+(\S+)\s+with\s+\x60lease\s+auto\x60`,
		lease, `^admitted per second of run / limit: lease auto (\S+),`)
	t.add("tol:5", "benchmarks.md: leases, strict, admitted / limit, lease off", bm, `with\s+\x60lease\s+auto\x60,\s+(\S+)\s+with\s+\x60lease\s+off\x60`,
		lease, `^admitted per second of run / limit: lease auto \S+, lease off (\S+)`)
	t.add("tol:6", "benchmarks.md: leases, cold keys, auto / off by rate", bm, `ratios:\s+(\S+)\s+by\s+rate`,
		lease, `^req/s, lease auto / lease off: (\S+)`)
	t.add("tol:6", "benchmarks.md: leases, cold keys, auto / off by CPU", bm, `by\s+rate,\s+(\S+)\s+by\s+CPU\s+\(the`,
		lease, `^by CPU \(lease off CPU per request / lease auto\): (\S+)`)
	// Each round's ratio, on one line after the median.
	rounds := `lease auto / lease off: \S+ \(each round:([\d. ]*)\)`
	t.addEach("tol:5", "benchmarks.md: leases, cold keys, the rounds' ratios", bm, `by\s+CPU\s+\(the\s+rounds\s+ranged\s+from\s+(\S+\s+to\s+\S+)\)`,
		lease, rounds)
	for _, r := range [][2]string{
		{"built-in `rateLimit` + `redis`", "built-in rateLimit + redis"},
		{"windowlimit + `redis`, `lease auto`", "windowlimit + redis, lease auto"},
		{"windowlimit + `redis`, `lease off`", "windowlimit + redis, lease off"},
	} {
		d, s, name := `^\| `+q(r[0])+` \| `, `(?s)^4\. Traefik.*?^`+q(r[1]), "benchmarks.md: leases, Traefik, "+r[1]
		t.add("@tol:25", name+", req/s", bm, d+`([\d,]+) \|`, lease, s+`\s+(\S+)`)
		t.add("tol:5", name+", vs built-in", bm, d+`[\d,]+ \| (\S+) \|`, lease, s+`\s+\S+\s+(\S+)`)
		t.add("tol:25", name+", calls per request", bm, d+`[\d,]+ \| \S+ \| (\S+) \|`, lease, s+`(?:\s+\S+){2}\s+(\S+)`)
		t.add("@tol:25", name+", CPU µs", bm, d+`[\d,]+ \| \S+ \| \S+ \| (\S+) \|`, lease, s+`(?:\s+\S+){3}\s+(\S+)`)
		t.add("tol:5", name+", by CPU", bm, d+`[\d,]+ \| \S+ \| \S+ \| \S+ \| (\S+) \|`, lease, s+`(?:\s+\S+){4}\s+(\S+)`)
	}
	t.add("tol:25", "benchmarks.md: leases, prose, Traefik, requests a script call", bm, `one\s+script\s+call\s+in\s+(\d+)\s+requests`,
		derived(lease, "traefik", leaseTraefikCalls), `one script call in (\d+) requests`)
	// The summary block: each goal's figure, which a rewrite leaves (the
	// block's goals and verdicts are no figures).
	for _, g := range [][3]string{
		{"1", "tol:25", "hot key: script calls per request, lease auto"},
		{"1", "tol:5", "hot key: fleet req/s, lease auto / memory"},
		{"2", "@tol:25", "strict, over the limit: most admitted in any 1 s, lease auto"},
		{"2", "@tol:25", "strict, over the limit: most admitted in any 1 s, lease off"},
		{"2", "tol:5", "strict, over the limit: admitted, lease auto / lease off"},
		{"3", "tol:5", "cold keys: calls per request, lease auto"},
		{"3", "tol:6", "cold keys: req/s, lease auto / lease off (no drop)"},
		{"4", "tol:5", "Traefik: req/s, plugin lease auto / built-in (redis)"},
	} {
		re := `^` + q(g[0]+". "+g[2]) + `\s+(\S+)\s+goal`
		t.addQuoted(g[1], "benchmarks.md: leases, summary, "+g[0]+". "+g[2], bm, re, lease, re)
	}
	t.add("range", "benchmarks.md: leases, summary, goals met (of 8)", bm, `Over\s+runs,\s+(\d+\s+or\s+\d+)\s+of\s+the\s+8\s+goals`,
		lease, `^(\d+) of 8 goals met`)
	// The section's opening paragraph, from the same run.
	t.add("tol:25", "benchmarks.md: leases, prose, Caddy calls per request", bm, `script\s+calls\s+to\s+(\S+)\s+per\s+request\s+in\s+Caddy`,
		lease, `^1\. hot key: script calls per request, lease auto\s+(\S+)`)
	t.add("tol:25", "benchmarks.md: leases, prose, Traefik calls per request", bm, `per\s+request\s+in\s+Caddy\s+and\s+(\S+)\s+in\s+Traefik`,
		lease, `(?s)^4\. Traefik.*?^windowlimit \+ redis, lease auto(?:\s+\S+){2}\s+(\S+)`)
	t.add("tol:5", "benchmarks.md: leases, prose, Redis / memory", bm, `three\s+Caddy\s+instances\s+on\s+Redis\s+serve\s+(\S+)\s+of`,
		lease, `^1\. hot key: fleet req/s, lease auto / memory\s+(\S+)`)
	t.add("tol:5", "benchmarks.md: leases, prose, lease off / memory", bm, `in\s+memory\s+\((\S+)\s+with\s+\x60lease\s+off\x60\)`,
		lease, `lease off / memory (\S+)\)`)
	t.add("tol:5", "benchmarks.md: leases, prose, strict auto / off", bm, `and\s+admitted\s+(\S+)\s+of\s+what\s+\x60lease\s+off\x60\s+did`,
		lease, `^2\. strict, over the limit: admitted, lease auto / lease off\s+(\S+)`)
	t.add("tol:6", "benchmarks.md: leases, prose, cold keys", bm, `one\s+call\s+each,\s+at\s+(\S+)\s+of\s+\x60lease\s+off\x60`,
		lease, `^req/s, lease auto / lease off: (\S+)`)
	t.addEach("tol:5", "benchmarks.md: leases, prose, cold keys' rounds", bm, `the\s+rounds\s+ranged\s+from\s+(\S+\s+to\s+\S+?)\);\s+two\s+Traefik`,
		lease, rounds)
	t.add("tol:5", "benchmarks.md: leases, prose, Traefik vs built-in", bm, `with\s+\x60redis\x60\s+\((\S+)\s+by\s+CPU\)`,
		lease, `^4\. Traefik: req/s, plugin lease auto / built-in \(redis\)\s+\S+\s+goal.*?by CPU (\S+);`)
	t.add("tol:5", "benchmarks.md: leases, prose, Traefik by CPU", bm, `serve\s+(\S+)\s+of\s+Traefik.s\s+built-in`,
		lease, `^4\. Traefik: req/s, plugin lease auto / built-in \(redis\)\s+(\S+)`)
}

// flood adds scripts/bench-flood.sh: one line per host and flood kind.
func (t *table) flood() {
	floodSh := script("flood_sh", nil, "scripts/bench-flood.sh")
	for _, r := range [][3]string{
		{"Caddy, fresh", "caddy", "fresh"},
		{"Caddy, saturating", "caddy", "saturating"},
		{"Traefik plugin, fresh", "traefik", "fresh"},
		{"Traefik plugin, saturating", "traefik", "saturating"},
		{"Traefik built-in, fresh", "builtin", "fresh"},
		{"Traefik built-in, saturating", "builtin", "saturating"},
	} {
		d, s := `^\| `+q(r[0])+` \|`, `^\S*\s*`+r[1]+` `+r[2]+`: slipped`
		name := "benchmarks.md: flood, " + r[1] + " " + r[2]
		t.add("exact", name+", limited client admitted", bm, d+` (\d+)/\d+ \|`, floodSh, s+` (\d+)/`)
		t.add("abs:5", name+", new clients served (%)", bm, d+` [^|]* \| (\d+)% \|`, floodSh, s+` [^,]*, new clients (\d+)% of budget`)
		t.add("@tol:25", name+", flood keys", bm, d+` [^|]* \| [^|]* \| ([\d,]+)`, floodSh, s+` .*?, flood (\d+) keys`)
		t.add("@tol:25", name+", CPU µs per request", bm, d+` [^|]* \| [^|]* \| [^|]* \| (\d+) µs \|`, floodSh, s+` .*? (\d+) µs CPU/req`)
		t.add("tol:25", name+", heap after, MiB", bm, d+`(?:[^|]*\|){4} \S+ -> (\S+) MiB \|`, floodSh, s+` .*?, heap \S+ -> (\S+) MiB`)
	}
	size := `^\S*\s*(?:caddy|traefik) \S+: slipped .*?, flood \d+ keys \((\d+)x max_keys`
	t.add("@tol:25", "README.md: flood size, times max_keys", "README.md", `Floods\s+of\s+(\S+\s+to\s+\S+)\s+times\s+\x60max_keys\x60`, floodSh, size)
	t.add("@tol:25", "why.md: flood size, times max_keys", "docs/why.md", `floods\s+of\s+(\S+\s+to\s+\S+)\s+times\s+\x60max_keys\x60`, floodSh, size)
	slipped := `^\S*\s*(?:caddy|traefik) \S+: slipped (\d+)/`
	t.add("exact", "why.md: flood, the limited client got through", "docs/why.md", `at\s+its\s+limit\s+got\s+through\s+(\d+)\s+times\s+under`, floodSh, slipped)
	t.add("exact", "README.md: flood, the limited client got through", "README.md", `at\s+its\s+limit\s+got\s+through\s+(\d+)\s+times`, floodSh, slipped)
}
