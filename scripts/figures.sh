#!/usr/bin/env bash
# Checks the figures README.md and docs/ publish against what their commands
# print today. Each figure is read from the doc's own text (so an edit of
# the doc is checked too), its command is run (once, however many figures
# it prints), and a table shows the doc's value, the printed one and the
# verdict:
#
#   exact   a count, bytes or a table row: the same text (commas ignored)
#   range   the doc gives a range from repeated runs ("4–12%", "0.914 to
#           1.000") or the values a run may print ("0 or 5"): every printed
#           value lies in it
#   tol N%  a ratio or a time: within N% of the doc's value (the tolerance
#           the doc states)
#
#   scripts/figures.sh          every figure (a few minutes; run it before
#                               publishing a figure)
#   scripts/figures.sh -fast    the deterministic counts only (under 2
#                               minutes): scripts/test.sh runs it
#
# It exits 1 if a figure differs or a command fails. Everything runs on
# loopback: the tests start their own redis-server processes.
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
[[ ${1:-} != -fast ]] || fast=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# out NAME COMMAND runs COMMAND once and prints its output; the first run
# keeps it in the work directory. A command that fails is a failed figure.
out() {
	if [[ ! -f $work/$1.out ]]; then
		if ! bash -c "$2" >"$work/$1.out" 2>&1; then
			printf '%s: command failed: %s\n' "$1" "$2" >&2
			tail -20 "$work/$1.out" >&2
			failed=1
		fi
	fi
	cat "$work/$1.out"
}

# matches REGEX reads a text and prints the first group of each match
# (Perl syntax, the whole text at once: \s+ also matches a line break, ^
# and $ match at each line).
matches() { RE=$1 perl -0777 -ne 'while (/$ENV{RE}/gm) { my $v = $1; $v =~ s/\s+/ /g; print "$v\n" }'; }

# num VALUE drops thousands separators and a trailing % or x.
num() { sed 's/,//g; s/[%x]$//' <<<"$1"; }

row() { printf '%-66s %-14s %-14s %s\n' "$@"; }

# fig KIND NAME DOC DOC_REGEX CMD_NAME CMD OUT_REGEX checks one figure:
# the first match of DOC_REGEX in the file DOC against every match of
# OUT_REGEX in what CMD prints. KIND: exact, range or tol:N.
fig() {
	local kind=$1 name=$2 doc=$3 docre=$4 cname=$5 cmd=$6 outre=$7 want got verdict=ok v r
	want=$(matches "$docre" <"$doc" | head -1)
	mapfile -t got < <(out "$cname" "$cmd" | matches "$outre")
	if [[ -z $want ]]; then
		verdict="DIFFERS: not found in $doc"
	elif ((${#got[@]} == 0)); then
		verdict="DIFFERS: not printed by: $cmd"
	fi
	for v in "${got[@]}"; do
		[[ $verdict == ok ]] || break
		case $kind in
		exact) [[ $(num "$want") == $(num "$v") ]] || verdict=DIFFERS ;;
		range)
			# "a–b", "a-b" or "a to b": from a to b; "a or b": one of them.
			r=${want// to /–}
			r=${r//-/–}
			if [[ $want == *" or "* ]]; then
				[[ $(num "$v") == $(num "${want%% or *}") || $(num "$v") == $(num "${want##* or }") ]] || verdict=DIFFERS
			else
				awk -v v="$(num "$v")" -v lo="$(num "${r%%–*}")" -v hi="$(num "${r##*–}")" \
					'BEGIN {exit !(v >= lo && v <= hi)}' || verdict=DIFFERS
			fi
			;;
		tol:*)
			awk -v v="$(num "$v")" -v w="$(num "$want")" -v t="${kind#tol:}" \
				'BEGIN {d = v - w; if (d < 0) d = -d; exit !(d <= w * t / 100)}' || verdict=DIFFERS
			;;
		esac
	done
	[[ $verdict == ok ]] || failed=1
	local shown=${got[0]:-}
	if ((${#got[@]} > 1)); then
		shown=$(printf '%s\n' "${got[@]}" | sort -g | sed -n '1p;$p' | paste -sd' ' | sed 's/ /../')
		[[ $(printf '%s\n' "${got[@]}" | sort -u | wc -l) != 1 ]] || shown=${got[0]}
	fi
	if ((${#want} > 14 || ${#shown} > 14)); then
		row "$name ($kind)" "" "" "$verdict"
		printf '    doc:     %s\n    printed: %s\n' "$want" "$(printf '%s\n' "${got[@]}" | sort -u | paste -sd'|')"
	else
		row "$name ($kind)" "$want" "$shown" "$verdict"
	fi
}

row figure doc printed verdict

# --- deterministic counts (-fast) ---------------------------------------

keysize='go test -count=1 -run BytesPerKey -v ./shared/redisstore'
fig exact "redis.md: MEMORY USAGE, IPv4 key" docs/redis.md '203\.0\.113\.77\}`, sliding, all 11 sub-windows[^|]*\|\s*(\d+)' \
	keysize "$keysize" 'rl:api:\{203\.0\.113\.77\}: (\d+) bytes'
fig exact "redis.md: MEMORY USAGE, IPv6 /64 key" docs/redis.md '5678::/64\}`, the same \|\s*(\d+)' \
	keysize "$keysize" 'rl:api:\{2001:db8:1234:5678::/64\}: (\d+) bytes'
fig exact "benchmarks.md: MEMORY USAGE, IPv4 key" docs/benchmarks.md '45-byte\s+string\):\s+(\d+)\s+bytes\s+for\s+an\s+IPv4' \
	keysize "$keysize" 'rl:api:\{203\.0\.113\.77\}: (\d+) bytes'
fig exact "benchmarks.md: MEMORY USAGE, IPv6 /64 key" docs/benchmarks.md 'IPv4\s+key,\s+(\d+)\s+for\s+an\s+IPv6' \
	keysize "$keysize" 'rl:api:\{2001:db8:1234:5678::/64\}: (\d+) bytes'

flood="go test -count=1 -run 'TestFloodCannot|TestModerateFlood' -v ./shared/ratelimit"
fig exact "security.md: flood, limited client admitted (of 80)" docs/security.md 'one request each \| (\d+) of 80' \
	flood "$flood" 'slipped (\d+)/80;'
fig exact "security.md: moderate flood, admitted (of 1000)" docs/security.md 'one request each \| (\d+) of 1000' \
	flood "$flood" 'slipped (\d+)/1000;'

headers='go test -count=1 -run TestHeadersPastTheWindow -v ./shared/httplimit'
for alg in sliding strict fixed log; do
	fig exact "headers.md: $alg, 1m, Retry-After" docs/headers.md "^\\| \`$alg\` \\| 1m[^|]*\\| 10 \\| (\\d+) \\|" \
		headers "$headers" "^\\s*headers_test.go:\\d+: $alg, window 1m0s.*Retry-After (\\d+),"
	fig exact "headers.md: $alg, 1m, X-RateLimit-Reset" docs/headers.md "^\\| \`$alg\` \\| 1m[^|]*\\| 10 \\| \\d+ \\| (\\d+) \\|" \
		headers "$headers" "^\\s*headers_test.go:\\d+: $alg, window 1m0s.*X-RateLimit-Reset (\\d+)$"
done
fig exact "headers.md: sliding, 15m, Retry-After" docs/headers.md '^\| `sliding` \| 15m[^|]*\| 5 \| (\d+) \|' \
	headers "$headers" 'window 15m0s.*Retry-After (\d+),'
fig exact "headers.md: sliding, 15m, X-RateLimit-Reset" docs/headers.md '^\| `sliding` \| 15m[^|]*\| 5 \| \d+ \| (\d+) \|' \
	headers "$headers" 'window 15m0s.*X-RateLimit-Reset (\d+)$'

accuracy='go test -count=1 -run TestAccuracyReport -v ./shared/ratelimit'
for alg in 'log' 'fixed' 'sliding k=5' 'sliding k=10' 'sliding k=30' 'strict k=5' 'strict k=10' 'strict k=30'; do
	re="^\\s*(${alg// /\\ }\\s+\\|.*?)\\s*$"
	fig exact "algorithms.md: accuracy table, $alg" docs/algorithms.md "$re" accuracy "$accuracy" "$re"
done
# The prose's range: log's throughput on bursty traffic (the on/off and
# clumps columns).
for col in 4 5 6 7 8 9 10 11; do
	fig range "algorithms.md: log, bursty column $((col - 3)) of 8, thr" docs/algorithms.md 'exact\s+`log`\s+reaches\s+(\S+)\s+of' \
		accuracy "$accuracy" "^\\s*log\\s+\\|(?:[^|]*\\|){$col}\\s*\\d\\.\\d\\d / (\\d\\.\\d\\d)"
done

exact='go test -race -count=1 -run RedisExact -v ./shared/redisstore ./caddymodule'
fig exact "README.md: RedisExact, admitted of 960" README.md '960\s+attempts\s+on\s+one\s+key:\s+(\d+)\s+admitted' \
	exact "$exact" '960 attempts on one key: (\d+) admitted, limit 300'
fig exact "why.md: RedisExact, admitted of 960" docs/why.md '960 attempts on one key: (\d+) admitted' \
	exact "$exact" '960 attempts on one key: (\d+) admitted, limit 300'

leasesim="go test -count=1 -run 'TestDifferentialLeases|TestFleetSimulation' -v ./shared/lease"
fig exact "redis.md: fleet, script calls a second, all allowed" docs/redis.md '\*\*([\d,]+)\s+script\s+calls\s+a\s+second' \
	leasesim "$leasesim" 'all allowed: 100 instances.*?: (\d+) script calls/s'
fig exact "redis.md: fleet, script calls per decision" docs/redis.md 'decisions\*\*\s+\((\S+)\s+per\s+decision\)' \
	leasesim "$leasesim" 'all allowed: 100 instances.*?\((0\.\d+) per decision\)'
fig exact "redis.md: fleet, strict, script calls a second" docs/redis.md 'twice\s+the\s+limit,\s+([\d,]+)\s+calls\s+a\s+second' \
	leasesim "$leasesim" 'strict at twice the limit: 100 instances.*?: (\d+) script calls/s'
fig exact "redis.md: fleet, strict, admitted" docs/redis.md 'admit\s+\(([\d,]+)\s+of\s+[\d,]+\)' \
	leasesim "$leasesim" 'strict at twice the limit:.*?admitted (\d+), per-request'
fig exact "redis.md: fleet, strict, per-request decisions" docs/redis.md 'admit\s+\([\d,]+\s+of\s+([\d,]+)\)' \
	leasesim "$leasesim" 'strict at twice the limit:.*?per-request (\d+)'
fig range "redis.md: lease traces, admitted on / off" docs/redis.md 'at\s+least\s+0\.9\s+of\s+it\s+\((\S+\s+to\s+\S+)\s+in' \
	leasesim "$leasesim" 'leases on admitted \d+, off \d+ \((\S+)\)'
fig exact "redis.md: lease traces, most over the limit after a reset" docs/redis.md 'over\s+the\s+limit\s+\((\d+)\s+in\s+every\s+run' \
	leasesim "$leasesim" 'a window holding a reset admitted at most (\d+) over the limit'

diff="go test -count=1 -run 'TestRefundAfterForget|TestDifferential\$' -v ./shared/redisstore"
fig exact "redis.md: differential, seeds" docs/redis.md 'random\s+traces\s+\((\d+)\s+seeds\s+by\s+default' \
	diff "$diff" 'differential_test.go:\d+: (\d+) seeds'
fig exact "redis.md: differential, refunds before a reset" docs/redis.md 'counts\s+the\s+refunds\s+of\s+before\s+a\s+reset,\s+(all\s+refused)' \
	diff "$diff" 'refunds of a count reserved before its key.s reset, (all refused)'

reset='go test -count=1 -run TestResetMidLeaseTwoInstances -v ./shared/lease'
fig exact "redis.md: an operator's reset, over the limit" docs/redis.md "operator's\\s+reset\\s+admitting\\s+[^(]*\\((\\d+)\\s+over\\)" \
	reset "$reset" 'admin reset .*\((\d+) over\)'
fig exact "redis.md: reset, units in the two leases" docs/redis.md 'two\s+instances\s+holding\s+(\d+)\s+units' \
	reset "$reset" 'reset with (\d+) units in leases'

if ((fast)); then
	((failed == 0)) || exit 1
	exit 0
fi

# --- ranges over runs, timings and slow measurements (on demand) ----------

fig range "security.md: flood, new clients served, 1 request a key" docs/security.md 'one request each \| \d+ of 80 \| (\S+) \|' \
	flood "$flood" '^\s*flood_test.go:\d+: 1 requests per key: slipped \d+/80;.*\((\d+)%\)'
fig range "security.md: flood, new clients served, 5 a key" docs/security.md 'limit first \| \d+ of 80 \| (\S+) \|' \
	flood "$flood" '^\s*flood_test.go:\d+: 5 requests per key: slipped \d+/80;.*\((\d+)%\)'
fig range "security.md: moderate flood, new clients, 1 a key" docs/security.md 'one request each \| \d+ of 1000 \| (\S+) \|' \
	flood "$flood" '^\s*flood_test.go:\d+: 1 requests per key: slipped \d+/1000;.*\((\d+)%\)'
fig range "security.md: moderate flood, new clients, 5 a key" docs/security.md 'limit first \| \d+ of 1000 \| (\S+) \|' \
	flood "$flood" '^\s*flood_test.go:\d+: 5 requests per key: slipped \d+/1000;.*\((\d+)%\)'

fig range "redis.md: an operator's reset, admitted" docs/redis.md "operator's\\s+reset\\s+admitting\\s+(\\S+\\s+to\\s+\\S+)\\s+\\(" \
	reset "$reset" 'admin reset .*admitted (\d+) of 8000'
fig range "redis.md: a lost key, over the limit" docs/redis.md 'lost\s+key\s+\S+\s+to\s+\S+\s+\((\S+\s+to\s+\S+)\s+over\)' \
	reset "$reset" 'lost reset .*\((\d+) over\)'

# The Traefik plugin's script calls: real time, so the sub-windows its
# 2,000 requests span vary.
leasecalls='go test -count=1 -run TestRedisLeaseCalls -v ./traefikplugin'
fig range "traefik.md: 2,000 requests, script calls, lease off" docs/traefik.md 'one\s+key\s+cost\s+(\S+\s+to\s+\S+)\s+script\s+calls\s+with\s+`lease:\s+off`' \
	leasecalls "$leasecalls" '2000 requests on one key: (\d+) script calls with lease off'
fig range "traefik.md: 2,000 requests, script calls, lease auto" docs/traefik.md '`lease:\s+off`\s+and\s+(\S+\s+to\s+\S+)\s+with\s*`auto`' \
	leasecalls "$leasecalls" 'with lease off, (\d+) with lease auto'

# Allocations under yaegi: a range over runs (see docs/benchmarks.md).
configs="cd scripts/yaegitest && go test -run '^\$' -bench PluginConfigs -benchtime 20000x -count 2 ."
while read -r bench label; do
	fig range "benchmarks.md: yaegi allocations, $bench" docs/benchmarks.md "^\\| $label \\| (\\S+) \\|" \
		configs "$configs" "^BenchmarkPluginConfigs/$bench-\\d+\\s.*?(\\d+) allocs/op"
done <<'EOF'
default defaults \(remote address, legacy headers, limit 60000\)
ipStrategy-depth-1 `ipStrategy: \{depth: 1\}`
ipStrategy-excludedIPs `ipStrategy.excludedIPs` \(two ranges, one entry excluded\)
ipStrategy-ipv6Subnet-56 `ipStrategy.ipv6Subnet: 56`, an IPv6 client
requestHeaderName `requestHeaderName`
requestHost `requestHost`
headers-ietf `headers: ietf`
headers-both `headers: both`
headers-none `headers: none`
limit-100000000 `limit: 100000000`
window-87600h `window: 87600h`
dryRun `dryRun`
countStatus `countStatus`
overrides `overrides`
EOF

# The eviction policies: a slow measurement (about 20 s), which the test
# asserts too; the doc's sentence names what each policy admitted.
evict='WINDOWLIMIT_REDIS_SIZING=1 go test -count=1 -v -run TestRedisEvictionPolicies ./shared/redisstore'
while read -r policy re; do
	fig exact "redis.md: maxmemory-policy $policy, victim admitted" docs/redis.md "$re" \
		evict "$evict" "^\\s*redis_sizing_test.go:\\d+: $policy\\s+victim admitted\\s+(\\d+) of 10"
done <<'EOF'
noeviction (\d+)\s+times\s+under\s+`noeviction`
allkeys-lru admitted\s+again\s+(\d+)\s+times\s+of\s+10,\s+its\s+full\s+budget,\s+under\s+`allkeys-lru`
volatile-lru admitted\s+again\s+(\d+)\s+times\s+of\s+10,\s+its\s+full\s+budget,\s+under\s+`allkeys-lru`\s+and\s+`volatile-lru`
allkeys-lfu (\d+)\s+times\s+under\s+`allkeys-lfu`
volatile-lfu (\d+)\s+times\s+under\s+`allkeys-lfu`\s+and\s+`volatile-lfu`
EOF
for policy in volatile-ttl allkeys-random; do
	fig range "redis.md: maxmemory-policy $policy, victim admitted" docs/redis.md '(\d+\s+or\s+\d+)\s+times\s+under\s+`volatile-ttl`' \
		evict "$evict" "^\\s*redis_sizing_test.go:\\d+: $policy\\s+victim admitted\\s+(\\d+) of 10"
done

((failed == 0)) || exit 1
