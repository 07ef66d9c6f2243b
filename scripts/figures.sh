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
#   max     a bound the doc gives ("within 0.11 s"): every printed value
#           at most the doc's
#   abs:N   a count that moves between runs by a few (the interpreter's
#           allocations): every printed value within N of the doc's, the
#           N the doc states
#   tol:N%  a ratio, a rate or a time: the median of the printed values
#           within N% of the doc's value, the tolerance the doc states
#
# A kind that starts with @ (@tol:25) is an absolute time, rate or CPU
# figure: it says what the machine it ran on is, not only what the code
# is. Such a figure is checked only on the machine the docs' times were
# published from, which docs/benchmarks.md names (`scripts/figures.sh
# -machine` prints this machine's name); elsewhere its row says "not
# checked" and shows what this machine printed. Ratios of two figures of
# one run, counts and bytes are checked on every machine.
#
#   scripts/figures.sh -fast    the deterministic counts only (under 2
#                               minutes): scripts/test.sh runs it
#   scripts/figures.sh          those, the counts that vary between runs,
#                               the interpreter's tables and Redis's
#                               sizing, chaos and OOM figures (2.5
#                               minutes once built): run it before
#                               publishing a figure;
#                               it lists the slow figures without running
#                               them
#   scripts/figures.sh -slow [NAME...]
#                               the slow figures alone (of the commands
#                               NAME... only): the compiled benchmarks'
#                               times and the bench-*.sh scripts' tables
#                               (real Caddy and Traefik under wrk, the
#                               Redis script's costs and its callgrind
#                               counts; about 25 minutes once Caddy and
#                               Traefik are built)
#   scripts/figures.sh -all     everything
#   scripts/figures.sh -machine this machine's name, as docs/benchmarks.md
#                               writes the machine its times are from
#
# WL_FIGURES_REWRITE=1 writes every time, rate and ratio this run printed
# into its doc, and this machine's name into docs/benchmarks.md as the
# machine the times are from (docs/development.md says when).
#
# Times, rates and ratios are checked against a tolerance the doc states
# for a quiet machine: on a machine busy with other work they differ, and
# say nothing of the code.
#
# It exits 1 if a figure differs or a command fails. Everything runs on
# loopback: the tests start their own redis-server processes.
set -euo pipefail
cd "$(dirname "$0")/.."

# machine prints this machine's name: the first 12 digits of its
# machine-id (its hostname if it has none), then its CPU and cores, so
# that a reader of the docs knows what the times were measured on.
machine() {
	local id model
	id=$(head -c 12 /etc/machine-id 2>/dev/null || true)
	model=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//')
	printf '%s: %s, %d cores\n' "${id:-$(hostname)}" "${model:-$(uname -m)}" "$(nproc)"
}
# The machine the docs' times are from, as docs/benchmarks.md names it.
machine_re='published\s+from\s+machine\s+`([^`]+)`'
here=$(machine)
published=$(RE=$machine_re perl -0777 -ne 'print $1 if /$ENV{RE}/' docs/benchmarks.md)
timed_run=0

mode=full
case ${1:-} in
-fast) mode=fast ;;
-slow) mode=slow ;;
-all) mode=all ;;
-machine)
	echo "$here"
	exit 0
	;;
'') ;;
*)
	echo "usage: scripts/figures.sh [-fast | -slow [COMMAND...] | -all | -machine]" >&2
	exit 2
	;;
esac
# -slow COMMAND...: only the slow figures of those commands (the names in
# the table's first column's group, e.g. caddy, traefik, redisbench,
# lease, flood_sh, core, caddyserve).
shift || true
only=" $* "
fast=0
[[ $mode != fast ]] || fast=1
# tier NAME: the figures that follow are of tier fast, full or slow; run
# says whether this mode runs them.
run=1
tier() {
	case $1:$mode in
	fast:fast | fast:full | fast:all | full:full | full:all | slow:slow | slow:all) run=1 ;;
	*) run=0 ;;
	esac
}
# WL_FIGURES_WORK=DIR keeps the commands' outputs in DIR, and reuses an
# output already there (to work on a regex without running its command).
if [[ -n ${WL_FIGURES_WORK:-} ]]; then
	work=$WL_FIGURES_WORK
	mkdir -p "$work"
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
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

# A figure derived from another command's figures (the least and the most
# of a column, a difference, a reciprocal) has a command NAME:WHAT that
# reads NAME's output, kept in the work directory by an earlier figure of
# NAME: from NAME PERL runs the Perl program PERL (perl -n) over it.
export WL_FIGURES_OUT=$work
from() { perl -ne "$2" "$WL_FIGURES_OUT/$1.out"; }
export -f from

# matches REGEX reads a text and prints the first group of each match
# (Perl syntax, the whole text at once: \s+ also matches a line break, ^
# and $ match at each line).
matches() { RE=$1 perl -0777 -ne 'while (/$ENV{RE}/gm) { my $v = $1; $v =~ s/\s+/ /g; print "$v\n" }'; }

# num VALUE drops thousands separators and a trailing % or x.
num() { sed 's/,//g; s/[%x]$//' <<<"$1"; }

row() { printf '%-66s %-14s %-14s %s\n' "$@"; }

# qre TEXT prints TEXT as a regular expression that matches it literally.
qre() { perl -e 'print quotemeta($ARGV[0])' "$1"; }

# servehttp_above reads go test -bench ServeHTTP's lines of Caddy's handler
# and prints, per case, its median ns/op minus the baseline case's median
# in µs, and its allocations and bytes above the baseline's, as
# docs/benchmarks.md gives them.
servehttp_above() {
	awk '
		function med(s, v, k, i, j, t) {
			k = split(s, v, " ")
			for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
			return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
		}
		/^BenchmarkServeHTTP\// {
			n = $1; sub(/^BenchmarkServeHTTP\//, "", n); sub(/-[0-9]+$/, "", n)
			t[n] = t[n] " " $3; b[n] = $5; a[n] = $7
		}
		END {
			for (n in t) if (n != "baseline")
				printf "handler %s: %.2f µs, %d allocs, %d B above the baseline\n", n, (med(t[n]) - med(t["baseline"])) / 1000, a[n] - a["baseline"], b[n] - b["baseline"]
		}'
}
export -f servehttp_above

# godur_s rewrites Go's durations (1.5ms, 2.033µs, 0.2s) in seconds.
godur_s() { perl -pe 's/(\d+(?:\.\d+)?)(µs|ms|s)\b/sprintf("%.6gs", $1 * {"µs" => 1e-6, "ms" => 1e-3, "s" => 1}->{$2})/ge'; }
export -f godur_s

# rewrite_value VALUE LIKE prints VALUE as LIKE is written: as many
# decimals, thousands separated by commas if LIKE's are.
rewrite_value() {
	awk -v v="$1" -v like="$2" 'BEGIN {
		d = index(like, ".") ? length(like) - index(like, ".") : 0
		s = sprintf("%.*f", d, v)
		if (like ~ /,/) {
			split(s, p, "."); i = p[1]; o = ""
			while (length(i) > 3) { o = "," substr(i, length(i) - 2) o; i = substr(i, 1, length(i) - 3) }
			s = i o (d ? "." p[2] : "")
		}
		print s
	}'
}

# rewrite DOC DOC_REGEX TEXT replaces the first group of DOC_REGEX's first
# match in DOC with TEXT (WL_FIGURES_REWRITE=1: a quiet run's times, rates
# and ratios into the docs; the prose around them is the writer's to read
# again).
rewrite() {
	RE=$2 NEW=$3 perl -0777 -i -pe 'if (/$ENV{RE}/m) { substr($_, $-[1], $+[1] - $-[1]) = $ENV{NEW} }' "$1"
}

# fig KIND NAME DOC DOC_REGEX CMD_NAME CMD OUT_REGEX checks one figure:
# the first match of DOC_REGEX in the file DOC against every match of
# OUT_REGEX in what CMD prints. KIND: exact, range or tol:N, after an @
# for an absolute time.
fig() {
	local kind=$1 name="$2 ($1)" doc=$3 docre=$4 cname=$5 cmd=$6 outre=$7 want got verdict=ok v r med scale=1 lo hi new timed=0
	if [[ $kind == @* ]]; then
		timed=1
		kind=${kind#@}
	fi
	# KIND/SCALE: the printed values are divided by SCALE first (ns to µs).
	if [[ $kind == */* ]]; then
		scale=${kind#*/}
		kind=${kind%/*}
	fi
	want=$(matches "$docre" <"$doc" | head -1)
	if ((run)) && [[ $mode == slow && $only != "  " && $only != *" ${cname%%:*} "* ]]; then
		return 0
	fi
	if ((!run)); then
		# Listed, not run: a slow figure in the default mode.
		[[ $mode == full ]] || return 0
		[[ -n $want ]] || {
			verdict="DIFFERS: not found in $doc"
			failed=1
		}
		[[ $verdict != ok ]] || verdict="not run (-slow)"
		if ((${#want} > 14)); then
			row "$name" "" "" "$verdict"
			printf '    doc:     %s\n' "$want"
		else
			row "$name" "$want" "" "$verdict"
		fi
		return 0
	fi
	mapfile -t got < <(out "$cname" "$cmd" | matches "$outre" | awk -v s="$scale" '{if (s == 1) print; else printf "%.4g\n", $1 / s}')
	if [[ -z $want ]]; then
		verdict="DIFFERS: not found in $doc"
	elif ((${#got[@]} == 0)); then
		verdict="DIFFERS: not printed by: $cmd"
	fi
	for v in "${got[@]}"; do
		[[ $verdict == ok ]] || break
		case $kind in
		exact)
			# Numbers compare as numbers (1 and 1.000), other text as text.
			if [[ $(num "$want") =~ ^[0-9.]+$ && $(num "$v") =~ ^[0-9.]+$ ]]; then
				awk -v v="$(num "$v")" -v w="$(num "$want")" 'BEGIN {exit !(v == w)}' || verdict=DIFFERS
			else
				[[ $(num "$want") == $(num "$v") ]] || verdict=DIFFERS
			fi
			;;
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
		max) awk -v v="$(num "$v")" -v w="$(num "$want")" 'BEGIN {exit !(v <= w)}' || verdict=DIFFERS ;;
		abs:*)
			awk -v v="$(num "$v")" -v w="$(num "$want")" -v t="${kind#abs:}" \
				'BEGIN {d = v - w; if (d < 0) d = -d; exit !(d <= t)}' || verdict=DIFFERS
			;;
		tol:*) ;; # below, on the median
		esac
	done
	if [[ $kind == tol:* && $verdict == ok ]]; then
		# The median of the printed values; a doc's range of runs ("93–96")
		# widened by the tolerance on either side.
		med=$(for v in "${got[@]}"; do num "$v"; done | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
		r=${want// to /–}
		r=${r//-/–}
		lo=$(num "${r%%–*}")
		hi=$(num "${r##*–}")
		awk -v v="$med" -v lo="$lo" -v hi="$hi" -v t="${kind#tol:}" \
			'BEGIN {exit !(v >= lo * (1 - t / 100) && v <= hi * (1 + t / 100))}' || verdict="DIFFERS (median $med)"
	fi
	# WL_FIGURES_REWRITE=1: a time, rate or ratio becomes what this run
	# printed, whether or not it was within its tolerance, so that a table
	# is one run's.
	if [[ -n ${WL_FIGURES_REWRITE:-} && $kind == tol:* && ($verdict == ok || $verdict == "DIFFERS (median"*) && $want =~ ^[0-9.,]+$ ]]; then
		new=$(rewrite_value "$med" "$want")
		[[ $new == "$want" ]] || { rewrite "$doc" "$docre" "$new" && verdict="rewritten: $want -> $new"; }
	fi
	# Another machine's time: shown, not checked (a figure the doc or
	# the command lacks is still a failure).
	if ((timed)); then
		timed_run=1
		if [[ ${here%%:*} != "${published%%:*}" && -z ${WL_FIGURES_REWRITE:-} && ($verdict == ok || $verdict == DIFFERS*) && $verdict != *"not found"* && $verdict != *"not printed"* ]]; then
			verdict="not checked: a time of another machine (${published%%:*})"
		fi
	fi
	[[ $verdict == ok || $verdict == rewritten* || $verdict == "not checked"* ]] || failed=1
	local shown=${got[0]:-}
	if ((${#got[@]} > 1)); then
		shown=$(printf '%s\n' "${got[@]}" | sort -g | sed -n '1p;$p' | paste -sd' ' | sed 's/ /../')
		[[ $(printf '%s\n' "${got[@]}" | sort -u | wc -l) != 1 ]] || shown=${got[0]}
	fi
	if ((${#want} > 14 || ${#shown} > 14)); then
		row "$name" "" "" "$verdict"
		printf '    doc:     %s\n    printed: %s\n' "$want" "$(printf '%s\n' "${got[@]}" | sort -u | paste -sd'|')"
	else
		row "$name" "$want" "$shown" "$verdict"
	fi
}

# The machines, where a time may be checked.
[[ $mode == fast ]] || printf 'times (@) published from machine %s; this is %s\n' "${published:-(none named)}" "$here"
row figure doc printed verdict

# --- deterministic counts (-fast) ---------------------------------------
tier fast

keysize='go test -count=1 -run BytesPerKey -v ./shared/redisstore'
fig exact "redis.md: MEMORY USAGE, IPv4 key" docs/redis.md '203\.0\.113\.77\}`, sliding, all 11 sub-windows[^|]*\|\s*(\d+)' \
	keysize "$keysize" 'rl:api:\{203\.0\.113\.77\}: (\d+) bytes'
fig exact "redis.md: MEMORY USAGE, IPv6 /64 key" docs/redis.md '5678::/64\}`, the same \|\s*(\d+)' \
	keysize "$keysize" 'rl:api:\{2001:db8:1234:5678::/64\}: (\d+) bytes'
fig exact "benchmarks.md: MEMORY USAGE, IPv4 key" docs/benchmarks.md '39-byte\s+string\):\s+(\d+)\s+bytes\s+for\s+an\s+IPv4' \
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
# The prose drawn from the table: sliding and strict at 1.5x (column 3:
# Poisson, 7: on/off, 11: clumps).
acc() { printf '^\\s*%s\\s+\\|(?:[^|]*\\|){%d}\\s*(\\d\\.\\d\\d) / (\\d\\.\\d\\d)' "$1" $(($2 - 1)); }
fig exact/0.01 "algorithms.md: sliding, 1.5x Poisson, % of the ideal" docs/algorithms.md 'within\s+5%\s+of\s+`N`\s+with\s+(\d+)%\s+of\s+the\s+ideal' \
	accuracy "$accuracy" "$(acc 'sliding k=10' 3 | sed 's/(\\d\\.\\d\\d) \//\\d\\.\\d\\d \//')"
fig exact "algorithms.md: sliding, 1.5x on/off, peak" docs/algorithms.md 'up\s+to\s+(\S+)\s+on/off' \
	accuracy "$accuracy" "$(acc 'sliding k=10' 7)"
fig exact "algorithms.md: sliding, 1.5x clumps, peak" docs/algorithms.md 'on/off\s+and\s+(\S+)\s+with\s+clumps' \
	accuracy "$accuracy" "$(acc 'sliding k=10' 11)"
fig exact "algorithms.md: strict k=10, 1.5x Poisson, thr" docs/algorithms.md 'throughput\s+\((\S+)\s+at\s+1\.5x\s+Poisson' \
	accuracy "$accuracy" "$(acc 'strict k=10' 3 | sed 's/(\\d\\.\\d\\d) \//\\d\\.\\d\\d \//')"
fig exact "algorithms.md: strict k=30, 1.5x Poisson, thr" docs/algorithms.md 'sub-windows,\s+(\S+)\s+with\s+30\)' \
	accuracy "$accuracy" "$(acc 'strict k=30' 3 | sed 's/(\\d\\.\\d\\d) \//\\d\\.\\d\\d \//')"

# The prose's range: log's throughput on bursty traffic (the on/off and
# clumps columns).
for col in 4 5 6 7 8 9 10 11; do
	fig range "algorithms.md: log, bursty column $((col - 3)) of 8, thr" docs/algorithms.md 'exact\s+`log`\s+reaches\s+(\S+)\s+of' \
		accuracy "$accuracy" "^\\s*log\\s+\\|(?:[^|]*\\|){$col}\\s*\\d\\.\\d\\d / (\\d\\.\\d\\d)"
done
# How far sliding goes over N at 1.5x Poisson, and the most fixed lets
# through on any trace.
prog='printf "sliding k=10, poisson 1.5x: %.0f%% over N\n", ($1 - 1) * 100 if /^\s*sliding k=10\s+\|(?:[^|]*\|){2}\s*(\d\.\d\d) \//'
fig max "algorithms.md: sliding k=10, 1.5x Poisson, % over N" docs/algorithms.md 'stays\s+within\s+(\d+)%\s+of\s+`N`' \
	accuracy:over "from accuracy $(printf %q "$prog")" 'poisson 1\.5x: (\d+)% over N'
prog='if (/^\s*fixed\s+\|/) { while (/(\d\.\d\d) \//g) { $m = $1 if $1 > $m } } END { print "fixed, the most in any window: ${m}x N\n" }'
fig exact "algorithms.md: fixed, the most in any window" docs/algorithms.md '`fixed`\s+lets\s+up\s+to\s+(\S+)x' \
	accuracy:fixed "from accuracy $(printf %q "$prog")" 'the most in any window: (\S+)x N'

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

fig exact "README.md: fleet, Redis calls a second" README.md 'one\s+key:\s+([\d,]+)\s+Redis\s+calls\s+a\s+second' \
	leasesim "$leasesim" 'all allowed: 100 instances.*?: (\d+) script calls/s'
fig exact "why.md: fleet, Redis calls a second" docs/why.md 'one\s+key\s+make\s+([\d,]+)\s+Redis\s+calls\s+a\s+second' \
	leasesim "$leasesim" 'all allowed: 100 instances.*?: (\d+) script calls/s'

diff="go test -count=1 -run 'TestRefundAfterForget|TestDifferential\$' -v ./shared/redisstore"
fig exact "redis.md: differential, seeds" docs/redis.md 'random\s+traces\s+\((\d+)\s+seeds\s+by\s+default' \
	diff "$diff" 'differential_test.go:\d+: (\d+) seeds'
fig exact "redis.md: differential, refunds before a reset" docs/redis.md 'counts\s+the\s+refunds\s+of\s+before\s+a\s+reset,\s+(all\s+refused)' \
	diff "$diff" 'refunds of a count reserved before its key.s reset, (all refused)'

reset='go test -count=1 -run TestResetMidLeaseTwoInstances -v ./shared/lease'
fig exact "redis.md: an operator's reset, over the limit" docs/redis.md "operator's\\s+reset\\s+admitting\\s+[^(]*\\((\\d+)\\s+over\\)" \
	reset "$reset" 'admin reset .*\((\d+) over\)'

if ((fast)); then
	((failed == 0)) || exit 1
	exit 0
fi

# The units the two leases hold at the reset depend on the goroutines'
# order: a range over runs.
fig range "redis.md: reset, units in the two leases" docs/redis.md 'two\s+instances\s+holding\s+(\d+\s+to\s+\d+)\s+units' \
	reset "$reset" 'reset with (\d+) units in leases'

# --- ranges over runs, allocations and go benchmarks (the default) ------
tier full

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
prog='printf "admin reset: %d short of the limit\n", $2 - $1 if /admin reset .*admitted (\d+) of 8000 requests at a limit of (\d+)/'
fig range "redis.md: an operator's reset, units short of the limit" docs/redis.md 'fresh\s+budget\s+was\s+(\S+\s+to\s+\S+)\s+units\s+short' \
	reset:short "from reset $(printf %q "$prog")" 'admin reset: (\d+) short'
fig range "redis.md: a lost key, over the limit" docs/redis.md 'lost\s+key\s+\S+\s+to\s+\S+\s+\((\S+\s+to\s+\S+)\s+over\)' \
	reset "$reset" 'lost reset .*\((\d+) over\)'

# The Traefik plugin's script calls: real time, so the sub-windows its
# 2,000 requests span vary.
leasecalls='go test -count=1 -run TestRedisLeaseCalls -v ./traefikplugin'
fig range "traefik.md: 2,000 requests, script calls, lease off" docs/traefik.md 'one\s+key\s+cost\s+(\S+\s+to\s+\S+)\s+script\s+calls\s+with\s+`lease:\s+off`' \
	leasecalls "$leasecalls" '2000 requests on one key: (\d+) script calls with lease off'
fig range "traefik.md: 2,000 requests, script calls, lease auto" docs/traefik.md '`lease:\s+off`\s+and\s+(\S+\s+to\s+\S+)\s+with\s*`auto`' \
	leasecalls "$leasecalls" 'with lease off, (\d+) with lease auto'

# Allocations under yaegi: within 5 of the doc's (see docs/benchmarks.md).
configs="cd scripts/yaegitest && go test -run '^\$' -bench PluginConfigs -benchtime 20000x -count 2 ."
while read -r bench label; do
	fig abs:5 "benchmarks.md: yaegi allocations, $bench" docs/benchmarks.md "^\\| $label \\| (\\S+) \\|" \
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
		evict "$evict" "^\\s*sizing_test.go:\\d+: $policy\\s+victim admitted\\s+(\\d+) of 10"
done <<'EOF'
noeviction (\d+)\s+times\s+under\s+`noeviction`
allkeys-lru admitted\s+again\s+(\d+)\s+times\s+of\s+10,\s+its\s+full\s+budget,\s+under\s+`allkeys-lru`
volatile-lru admitted\s+again\s+(\d+)\s+times\s+of\s+10,\s+its\s+full\s+budget,\s+under\s+`allkeys-lru`\s+and\s+`volatile-lru`
allkeys-lfu (\d+)\s+times\s+under\s+`allkeys-lfu`
volatile-lfu (\d+)\s+times\s+under\s+`allkeys-lfu`\s+and\s+`volatile-lfu`
EOF
for policy in volatile-ttl allkeys-random; do
	fig range "redis.md: maxmemory-policy $policy, victim admitted" docs/redis.md '(\d+\s+or\s+\d+)\s+times\s+under\s+`volatile-ttl`' \
		evict "$evict" "^\\s*sizing_test.go:\\d+: $policy\\s+victim admitted\\s+(\\d+) of 10"
done


# Redis's used_memory per key (docs/redis.md's sizing table): within 8 B,
# as the doc says.
sizing='WINDOWLIMIT_REDIS_SIZING=1 go test -count=1 -v -run TestRedisSizing ./shared/redisstore'
while IFS='|' read -r col label out; do
	fig abs:8 "redis.md: sizing, $out" docs/redis.md "^\\| $label \\| $col \\|" \
		sizing "$sizing" "sizing_test.go:\\d+: $out\\s+MEMORY USAGE.*= (\\d+) B/key"
done <<'END'
(\d+) / \d+ / \d+|sliding, 10 sub-windows, IPv4, one request / every sub-window written / 50 in every sub-window|sliding 10 sub-windows, IPv4, 1 request
\d+ / (\d+) / \d+|sliding, 10 sub-windows, IPv4, one request / every sub-window written / 50 in every sub-window|sliding 10 sub-windows, IPv4, every sub-window
\d+ / \d+ / (\d+)|sliding, 10 sub-windows, IPv4, one request / every sub-window written / 50 in every sub-window|sliding 10 sub-windows, IPv4, 50 in every sub-window
(\d+) / \d+ / \d+|sliding, 10 sub-windows, IPv6 /64, one request / every sub-window written / 50 in every sub-window|sliding 10 sub-windows, IPv6 /64, 1 request
\d+ / (\d+) / \d+|sliding, 10 sub-windows, IPv6 /64, one request / every sub-window written / 50 in every sub-window|sliding 10 sub-windows, IPv6 /64, every sub-window
\d+ / \d+ / (\d+)|sliding, 10 sub-windows, IPv6 /64, one request / every sub-window written / 50 in every sub-window|sliding 10 sub-windows, IPv6 /64, 50 in every sub-window
(\d+)|sliding, 10 sub-windows, 40-byte API key, every sub-window written|sliding 10 sub-windows, 40-byte API key, every sub-window
(\d+) / \d+|log, 10 requests, IPv4 / IPv6 /64|log, IPv4, 10 entries
\d+ / (\d+)|log, 10 requests, IPv4 / IPv6 /64|log, IPv6 /64, 10 entries
END
fig abs:8 "redis.md: sizing example, bytes a key" docs/redis.md 'about\s+1\.1\s+M\s+keys\s+x\s+(\d+)\s+B' \
	sizing "$sizing" 'IPv4, 50 in every sub-window\s+MEMORY USAGE.*= (\d+) B/key'
prog='printf "1.1 M keys x %d B x 2 = %.0f MB\n", $1, 1.1 * $1 * 2 if /IPv4, 50 in every sub-window\s+MEMORY USAGE.*= (\d+) B\/key/'
fig tol:5 "redis.md: sizing example, MB" docs/redis.md 'x\s+2,\s+about\s+(\d+)\s+MB' \
	sizing:example "from sizing $(printf %q "$prog")" ' x 2 = (\d+) MB'

# The chaos tests (docs/redis.md): Redis killed, restarted, asleep.
chaos='set -o pipefail; go test -race -count=1 -run Chaos -v ./shared/redisstore | godur_s'
fig range "redis.md: chaos, requests that tried the dead Redis" docs/redis.md 'no\s+denial;\s+(\d+\s+to\s+\d+)\s+requests' \
	chaos "$chaos" 'chaos_test.go:\d+: \d+ calls;.*?; (\d+) tried dead Redis'
fig @tol:25/0.001 "redis.md: chaos, slowest request during the outage, ms" docs/redis.md 'slowest\s+request\s+during\s+the\s+outage\s+(\S+)\s+ms' \
	chaos "$chaos" 'chaos_test.go:\d+: \d+ calls;.*?during outage (\S+)s,'
fig @tol:25 "redis.md: chaos, the breaker closed after the restart, s" docs/redis.md 'breaker\s+closed\s+(\S+\s+to\s+\S+)\s+s\s+after\s+the\s+restart' \
	chaos "$chaos" 'chaos_test.go:\d+: \d+ calls;.*?recovered (\S+)s after restart'
fig exact "redis.md: chaos, requests timed out while Redis slept" docs/redis.md 'SLEEP\s+1`\s+\(read\s+timeout\s+100\s+ms\)\s+\|\s+(\d+)\s+requests' \
	chaos "$chaos" 'slowest request while Redis slept: .*?; (\d+) timed out'
fig @max "redis.md: chaos, closed after Redis woke, s" docs/redis.md 'closed\s+within\s+(\S+)\s+s\s+of\s+Redis\s+waking' \
	chaos "$chaos" 'slowest request while Redis slept: .*?closed (\S+)s after it woke'
recovery='set -o pipefail; go test -count=1 -run TestRedisRecoversAfterLongOutage -v ./caddymodule | godur_s'
fig @range/0.001 "redis.md: go-redis, breaker closed after a long outage, ms" docs/redis.md 'the\s+breaker\s+closes\s+(\S+)\s+ms\s+after\s+the\s+restart' \
	recovery "$recovery" 'breaker closed (\S+)s after Redis restarted'

# Memory figures of docs/caddy.md, docs/security.md and docs/redis.md.
sketchmem='go test -count=1 -run TestSketchMemory -v ./shared/ratelimit'
fig exact "caddy.md: the summary of evicted keys, B a key of max_keys" docs/caddy.md 'evicted\s+keys\s+at\s+(\S+)\s+B\s+a\s+key' \
	sketchmem "$sketchmem" 'max_keys 100000: .*?: (\S+) bytes per key'
fig range "security.md: the summary, B a key of max_keys" docs/security.md '(\d+\s+to\s+\d+)\s+bytes\s+per\s+key\s+of\s+`max_keys`' \
	sketchmem "$sketchmem" 'max_keys 100000: .*?: (\S+) bytes per key'
oom='go test -race -count=1 -run TestRedisOOM -v ./shared/redisstore'
fig tol:10 "redis.md: OOM, fresh keys that fill 3 MB" docs/redis.md 'fills\s+a\s+3\s+MB\s+Redis\s+with\s+about\s+([\d,]+)' \
	oom "$oom" 'redis over maxmemory after (\d+) fresh keys'
fig exact "redis.md: OOM, the client at its limit admitted (of 20)" docs/redis.md 'at\s+its\s+limit\s+is\s+then\s+admitted\s+(\d+)\s+times\s+of\s+20' \
	oom "$oom" 'the client at its limit admitted (\d+) times of 20'

# --- the interpreter's allocations and times (the default) -------------

bm=docs/benchmarks.md
coreyaegi="cd scripts/yaegitest && go test -run '^\$' -bench 'TakeInterpreted' -benchtime 20000x ."
fig @tol:25 "benchmarks.md: TakeAt under yaegi, µs" $bm '^\| under yaegi, TakeAt [^|]*\| (\S+) µs' \
	coreyaegi "$coreyaegi" '^BenchmarkTakeInterpreted/TakeAt-\d+\s.*?(\S+) µs/op'
fig abs:1 "benchmarks.md: TakeAt under yaegi, allocs" $bm '^\| under yaegi, TakeAt [^|]*\| \S+ µs, (\d+) interp' \
	coreyaegi "$coreyaegi" '^BenchmarkTakeInterpreted/TakeAt-\d+\s.*?(\S+) interp-allocs/op'
fig @tol:25 "benchmarks.md: naive window under yaegi, µs" $bm '^\| under yaegi, naive [^|]*\| (\S+) µs' \
	coreyaegi "$coreyaegi" '^BenchmarkTakeInterpreted/naive-\d+\s.*?(\S+) µs/op'
fig abs:1 "benchmarks.md: naive window under yaegi, allocs" $bm '^\| under yaegi, naive [^|]*\| \S+ µs, (\d+) allocs' \
	coreyaegi "$coreyaegi" '^BenchmarkTakeInterpreted/naive-\d+\s.*?(\S+) interp-allocs/op'

# The interpreter's allocations per request, and its times.
perreq="cd scripts/yaegitest && go test -run '^\$' -bench 'PluginInterpreted|^BenchmarkPieces\$|TrivialPlugin|TakeInterpreted' -benchtime 20000x -count 2 ."
# second BENCH prints a regex that skips the first of two runs of BENCH
# (a denied run's log lines come between its name and its figures).
second() { printf '(?s)^Benchmark%s-\\d+\\s.*?allocs/op.*?^Benchmark%s-\\d+\\s.*?' "$1" "$1"; }
while read -r bench allocs label; do
	fig @tol:40 "benchmarks.md: yaegi per request, $bench, µs" $bm "^\\| $label \\| (\\S+) µs \\|" \
		perreq "$perreq" "$(second "$bench")(\\S+) µs/op"
	fig "$allocs" "benchmarks.md: yaegi per request, $bench, allocs" $bm "^\\| $label \\| \\S+ µs \\| (\\S+) \\|" \
		perreq "$perreq" "(?s)^Benchmark$bench-\\d+\\s.*?(\\d+) allocs/op"
done <<'END'
PluginInterpreted/allowed range allowed request, 1024 IPv4 clients
PluginInterpreted/allowed-ipv6 range allowed request, 1024 IPv6 clients \(grouped by /64\)
PluginInterpreted/denied range rejected request \(with its log line, at most one a second\)
PluginInterpreted/allowed-limit-60000 exact limit 60000 \(the larger table\)
TrivialPlugin/floor.NewWindow exact the least sliding window \(`scripts/floorplugin`\)
TrivialPlugin/floor.NewCounter exact a trivial middleware: a mutex, a map increment, one header
TrivialPlugin/floor.NewPassThrough exact the cheapest possible yaegi middleware \(call the next handler\)
END
while read -r bench col label; do
	fig @tol:40/1000 "benchmarks.md: yaegi per request, $bench, µs" $bm "^\\| $label \\| $col µs \\|" \
		perreq "$perreq" "$(second "${bench//+/\\+}")(\\S+) ns/piece"
done <<'END'
Pieces/TakeAt-allowed (\S+)\s/\s\S+ of these, the core's decision \(`TakeAt`\), allowed / denied
Pieces/TakeAt-denied \S+\s/\s(\S+) of these, the core's decision \(`TakeAt`\), allowed / denied
Pieces/TakeReservedAt (\S+)\s/\s\S+ `countStatus`'s reservation \(`TakeReservedAt`\), and with its refund \(`RefundAt`\)
Pieces/TakeReservedAt+RefundAt \S+\s/\s(\S+) `countStatus`'s reservation \(`TakeReservedAt`\), and with its refund \(`RefundAt`\)
END
while read -r bench col label; do
	fig abs:3 "benchmarks.md: yaegi per request, $bench, allocs" $bm "^\\| $label \\| [^|]* \\| $col \\|" \
		perreq "$perreq" "^Benchmark${bench//+/\\+}-\\d+\\s.*?(\\d+) allocs/op"
done <<'END'
Pieces/TakeAt-allowed (\d+)\s/\s\d+ of these, the core's decision \(`TakeAt`\), allowed / denied
Pieces/TakeAt-denied \d+\s/\s(\d+) of these, the core's decision \(`TakeAt`\), allowed / denied
Pieces/TakeReservedAt (\d+)\s/\s\d+ `countStatus`'s reservation \(`TakeReservedAt`\), and with its refund \(`RefundAt`\)
Pieces/TakeReservedAt+RefundAt \d+\s/\s(\d+) `countStatus`'s reservation \(`TakeReservedAt`\), and with its refund \(`RefundAt`\)
END
fig exact "benchmarks.md: prose, an allowed request's allocations" $bm "Of\\s+an\\s+allowed\\s+request's\\s+(\\d+)\\s+allocations" \
	perreq "$perreq" '^BenchmarkPluginInterpreted/allowed-limit-60000-\d+\s.*?(\d+) allocs/op'
fig exact "benchmarks.md: prose, the core's decision's allocations" $bm "the\\s+core's\\s+decision\\s+makes\\s+(\\d+)" \
	perreq "$perreq" '^BenchmarkPieces/TakeAt-allowed-\d+\s.*?(\d+) allocs/op'
fig exact "benchmarks.md: prose, the call into the plugin" $bm 'the\s+call\s+into\s+the\s+plugin\s+(\d+);' \
	perreq "$perreq" '^BenchmarkTrivialPlugin/floor.NewPassThrough-\d+\s.*?(\d+) allocs/op'
fig exact "benchmarks.md: prose, reading the clock" $bm 'clock\s+and\s+the\s+remote\s+address\s+make\s+(\d+)\s+each' \
	perreq "$perreq" '^BenchmarkPieces/time.Now\(\).UnixNano\(\)-\d+\s.*?(\d+) allocs/op'
fig exact "benchmarks.md: prose, the remote address" $bm 'clock\s+and\s+the\s+remote\s+address\s+make\s+(\d+)\s+each' \
	perreq "$perreq" '^BenchmarkPieces/remote-addr-key-\d+\s.*?(\d+) allocs/op'
fig exact "benchmarks.md: prose, countStatus's reserve and refund" $bm 'written\s+out\):\s+(\d+)\s+\(`-bench\s+Pieces`\)' \
	perreq "$perreq" '^BenchmarkPieces/TakeReservedAt\+RefundAt-\d+\s.*?(\d+) allocs/op'
while read -r bench re; do
	fig exact "benchmarks.md: TrivialPlugin, $bench, allocs" $bm "$re" \
		perreq "$perreq" "^BenchmarkTrivialPlugin/floor.$bench-\\d+\\s.*?(\\d+) allocs/op"
done <<'END'
NewPassThrough next\s+handler\s+makes\s+(\d+),
NewCounter the\s+trivial\s+plugin\s+(\d+),\s+the\s+least
NewWindow the\s+least\s+sliding\s+window\s+(\d+)\s+\(exact
END
fig abs:5 "benchmarks.md: prose, countStatus's allocations" $bm '\(`-bench\s+Pieces`\)\s+of\s+its\s+(\d+)\s+allocations' \
	configs "$configs" '^BenchmarkPluginConfigs/countStatus-\d+\s.*?(\d+) allocs/op'

# The Redis path under yaegi: the layers' CPU (a range of runs, widened by
# the tolerance) and their allocations (within 3, the 1,000 keys' within
# 8, as the doc says).
layers="cd scripts/yaegitest && go test -run '^\$' -bench RedisLayersInterpreted -benchtime 3000x -count 2 ."
while read -r bench label; do
	for pm in pooled pipelined; do
		# The pipelined columns come after the pooled two, but for a
		# pipelined-only row (no MODE), whose label holds its empty
		# pooled cells.
		if [[ $bench != *-MODE ]]; then
			[[ $pm == pipelined ]] || continue
			cols=''
		elif [[ $pm == pooled ]]; then cols=''; else cols='[^|]*\|[^|]*\|'; fi
		name=${bench/-MODE/-$pm}
		within=3
		[[ $name != *1000-keys* ]] || within=8
		fig @tol:25 "benchmarks.md: Redis layers, $name, CPU µs" $bm "^\\| $label \\|$cols (\\S+) \\|" \
			layers "$layers" "^BenchmarkRedisLayersInterpreted/$name-\\d+\\s.*?(\\S+) cpu-µs/op"
		fig abs:$within "benchmarks.md: Redis layers, $name, allocs" $bm "^\\| $label \\|$cols [^|]* \\| (\\S+) \\|" \
			layers "$layers" "^BenchmarkRedisLayersInterpreted/$name-\\d+\\s.*?(\\d+) allocs/op"
	done
done <<'END'
client-MODE client \(`EvalSha`\)
prepared-MODE client, prepared \(`EvalShaPrepared`\)
store-MODE store \(`redisstore.Store.Take`\)
guard-MODE guard \(`guard.Guard.Take`\)
remote-MODE the plugin's call \(`guard.TakeKey` with the store's `KeyCall`: guard, store and client in one interpreted call\)
remote-pipelined-compiled the plugin's call compiled, for reference \(the fake Redis, the system calls, the pipeline's goroutines\) \| – \| –
plugin-pipelined-limit-60000 plugin \(`ServeHTTP`, limit 60000, `lease off`, `onStoreError deny`\) \| – \| –
plugin-pipelined-1000-keys-lease-auto plugin, 1,000 keys from a header, `lease auto` \| – \| –
plugin-pipelined-1000-keys-lease-off plugin, 1,000 keys from a header, `lease off` \| – \| –
END
# A cold key with leases on and off (docs/traefik.md): the layers' rows.
for lease in auto off; do
	re='look-up\s+in\s+the\s+lease\s+table\s+\(on\s+1,000\s+busy\s+keys,\s+(\d+)'
	[[ $lease == auto ]] || re='interpreter\s+allocations\s+a\s+request\s+against\s+(\d+)\s+with\s+`lease:\s+off`'
	fig abs:8 "traefik.md: a cold key's allocations, lease $lease" docs/traefik.md "$re" \
		layers "$layers" "^BenchmarkRedisLayersInterpreted/plugin-pipelined-1000-keys-lease-$lease-\\d+\\s.*?(\\d+) allocs/op"
done


# --- slow: the go benchmarks that take minutes, and the bench-*.sh ------
# scripts' tables (real Caddy and Traefik under wrk, a redis-server and
# its callgrind twin)
tier slow

core="go test -run '^\$' -bench 'Take|BytesPerKey' -benchtime 1s ./shared/ratelimit"
while read -r bench label; do
	fig @tol:25 "benchmarks.md: $bench, ns/op" $bm "^\\| $label \\| (\\S+) ns/op" \
		core "$core" "^Benchmark$bench-\\d+\\s+\\d+\\s+(\\S+) ns/op"
	fig exact "benchmarks.md: $bench, allocs" $bm "^\\| $label \\| \\S+ ns/op, (\\d+) allocs" \
		core "$core" "^Benchmark$bench-\\d+\\s.*?(\\d+) allocs/op"
done <<'END'
TakeHotKey Take, one hot key
TakeHotKeyParallel Take, hot key, parallel
TakeDenied Take, denied key
END
fig @tol:25 "benchmarks.md: TakeMillionKeys, ns/op" $bm '^\| Take over 1M keys, serial / parallel \| (\d+) /' \
	core "$core" '^BenchmarkTakeMillionKeys-\d+\s+\d+\s+(\S+) ns/op'
fig @tol:25 "benchmarks.md: TakeMillionKeysParallel, ns/op" $bm '^\| Take over 1M keys, serial / parallel \| \d+ / (\d+) ns/op' \
	core "$core" '^BenchmarkTakeMillionKeysParallel-\d+\s+\d+\s+(\S+) ns/op'
fig exact "benchmarks.md: TakeMillionKeys(Parallel), allocs" $bm '^\| Take over 1M keys, serial / parallel \| [^|]*, (\d+) allocs' \
	core "$core" '^BenchmarkTakeMillionKeys(?:Parallel)?-\d+\s.*?(\d+) allocs/op'
fig @tol:25 "benchmarks.md: TakeLog, ns/op" $bm '^\| Take, log \| (\S+) ns/op' \
	core "$core" '^BenchmarkTakeLog-\d+\s+\d+\s+(\S+) ns/op'
fig @tol:25 "benchmarks.md: TakeAllThreeRules, ns/op" $bm '^\| three rules together \| (\S+) ns/op' \
	core "$core" '^BenchmarkTakeAllThreeRules-\d+\s+\d+\s+(\S+) ns/op'
fig abs:1 "benchmarks.md: heap per tracked key, B" $bm '^\| heap per tracked key [^|]*\| (\d+) B' \
	core "$core" '^BenchmarkBytesPerKey-\d+\s.*?(\S+) B/key'
fig abs:1 "caddy.md: heap per tracked key, B" docs/caddy.md 'sub-windows,\s+(\d+)\s+B\s+a\s+key' \
	core "$core" '^BenchmarkBytesPerKey-\d+\s.*?(\S+) B/key'
fig abs:1 "security.md: a key, B" docs/security.md 'a\s+key\s+costs\s+(\d+)\s+bytes,\s+plus\s+the\s+summary' \
	core "$core" '^BenchmarkBytesPerKey-\d+\s.*?(\S+) B/key'
fig range "security.md: the summary at a full zone, B a key of max_keys" docs/security.md '(\d+\s+to\s+\d+)\s+bytes\s+per\s+key\s+of\s+`max_keys`' \
	core "$core" '^BenchmarkBytesPerKey-\d+\s.*?(\S+) sketch-B/max_key'
fig @tol:25/1000 "benchmarks.md: TakeFlood, sliding, µs" $bm 'full\s+zone\s+[^)]*\)\s+costs\s+(\S+)\s+µs' \
	core "$core" '^BenchmarkTakeFlood/sliding-\d+\s+\d+\s+(\S+) ns/op'
fig @tol:25/1000 "benchmarks.md: TakeFlood, log, µs" $bm 'µs\s+compiled,\s+(\S+)\s+µs\s+for\s+a\s+`log`' \
	core "$core" '^BenchmarkTakeFlood/log-\d+\s+\d+\s+(\S+) ns/op'

clientip="go test -run '^\$' -bench 'ClientIP|SourceKey' -benchmem ./traefikplugin/"
fig @tol:25 "benchmarks.md: ClientIP, remote address, ns" $bm 'client\s+IP\s+costs\s+(\d+)\s+ns' \
	clientip "$clientip" '^BenchmarkClientIP/remote-\d+\s+\d+\s+(\S+) ns/op'
fig exact "benchmarks.md: ClientIP, remote address, allocs" $bm 'client\s+IP\s+costs\s+\d+\s+ns\s+and\s+(\d+)\s+allocations' \
	clientip "$clientip" '^BenchmarkClientIP/remote-\d+\s.*?(\d+) allocs/op'
fig @tol:25 "benchmarks.md: ClientIP, a depth, ns" $bm 'address,\s+(\S+)\s+ns\s+with\s+a\s+depth' \
	clientip "$clientip" '^BenchmarkClientIP/depth\d-\d+\s+\d+\s+(\S+) ns/op'
fig @tol:25 "benchmarks.md: ClientIP, excluded ranges, ns" $bm '(\d+)\s+ns\s+with\s+excluded\s+ranges' \
	clientip "$clientip" '^BenchmarkClientIP/excluded-\d+\s+\d+\s+(\S+) ns/op'
fig @tol:25 "benchmarks.md: ClientIP, IPv6 grouping, ns" $bm '(\d+)\s+ns\s+and\s+\d+\s+allocations\s+with\s+IPv6' \
	clientip "$clientip" '^BenchmarkClientIP/remote-ipv6subnet-\d+\s+\d+\s+(\S+) ns/op'
fig exact "benchmarks.md: ClientIP, IPv6 grouping, allocs" $bm '\d+\s+ns\s+and\s+(\d+)\s+allocations\s+with\s+IPv6' \
	clientip "$clientip" '^BenchmarkClientIP/remote-ipv6subnet-\d+\s.*?(\d+) allocs/op'
httplimit="go test -run '^\$' -bench . -benchmem ./shared/httplimit/"
fig @tol:25 "benchmarks.md: legacy headers, ns" $bm 'legacy\s+headers\s+costs\s+(\d+)\s+ns' \
	httplimit "$httplimit" '^BenchmarkWriteHeaders/legacy-\d+\s+\d+\s+(\S+) ns/op'
fig exact "benchmarks.md: legacy headers, allocs" $bm 'legacy\s+headers\s+costs\s+\d+\s+ns\s+and\s+(\d+)\s+allocation' \
	httplimit "$httplimit" '^BenchmarkWriteHeaders/legacy-\d+\s.*?(\d+) allocs/op'
fig @tol:25 "benchmarks.md: both header sets, ns" $bm 'both\s+sets\s+(\d+)\s+ns' \
	httplimit "$httplimit" '^BenchmarkWriteHeaders/both-\d+\s+\d+\s+(\S+) ns/op'
fig exact "benchmarks.md: both header sets, allocs" $bm 'both\s+sets\s+\d+\s+ns\s+and\s+(\d+)' \
	httplimit "$httplimit" '^BenchmarkWriteHeaders/both-\d+\s.*?(\d+) allocs/op'
fig @tol:25 "benchmarks.md: a complete rejection, ns" $bm 'complete\s+rejection\s+(\d+)\s+ns' \
	httplimit "$httplimit" '^BenchmarkReject-\d+\s+\d+\s+(\S+) ns/op'
fig exact "benchmarks.md: a complete rejection, allocs" $bm 'complete\s+rejection\s+\d+\s+ns\s+and\s+(\d+)' \
	httplimit "$httplimit" '^BenchmarkReject-\d+\s.*?(\d+) allocs/op'

# The Caddy handler: each case's median minus the baseline's median, in
# µs, as the doc computes it (servehttp_above below).
caddyserve="set -o pipefail; go test -run X -bench 'ServeHTTP\$' -benchmem -count 3 ./caddymodule | tee /dev/stderr | servehttp_above"
while read -r case re; do
	fig @tol:50 "benchmarks.md: Caddy handler, $case, µs" $bm "$re" caddyserve "$caddyserve" "^handler $case: (\\S+) µs"
done <<'END'
allowed/client_ip baseline`\s+case,[^:]*:\s+(\S+)\s+µs\s+allowed
allowed/headers_none (\S+)\s+µs\s+with\s+`headers\s+none`
allowed/header_key (\S+)\s+µs\s+keyed\s+by\s+a\s+header
allowed/two_zones (\S+)\s+µs\s+with\s+two\s+zones
denied/no_error_routes (\S+)\s+µs\s+for\s+a\s+rejection\s+written\s+directly
denied/handle_errors (\S+)\s+µs\s+for\s+one\s+returned\s+to\s+`handle_errors`
END
fig exact "benchmarks.md: Caddy handler, allowed, allocs" $bm 'keyed\s+by\s+client\s+IP\s+\((\d+)\s+allocations' \
	caddyserve "$caddyserve" '^handler allowed/client_ip: \S+ µs, (\d+) allocs'
fig exact "benchmarks.md: Caddy handler, allowed, bytes" $bm 'keyed\s+by\s+client\s+IP\s+\(\d+\s+allocations,\s+(\d+)\s+B' \
	caddyserve "$caddyserve" '^handler allowed/client_ip: \S+ µs, \d+ allocs, (\d+) B'
fig exact "benchmarks.md: Caddy handler, headers none, allocs" $bm '`headers\s+none`\s+\((\d+)\s+allocations\)' \
	caddyserve "$caddyserve" '^handler allowed/headers_none: \S+ µs, (\d+) allocs' 

# The Redis site's handler and its go-redis client per request, and one
# decision through the store over go-redis.
busykeys="go test -run '^\$' -bench ServeHTTPRedisBusyKeys -benchtime 100000x -count 3 ./caddymodule"
for case in redis baseline; do
	case $case in
	redis) dl='`redis`: the handler, `store redis`' ;;
	baseline) dl='`baseline`: the loop alone' ;;
	esac
	dq=$(qre "$dl")
	fig tol:25 "benchmarks.md: Caddy handler with Redis, $case, CPU µs" $bm "^\\| $dq \\| (\\S+) \\|" \
		busykeys "$busykeys" "^BenchmarkServeHTTPRedisBusyKeys/$case-\\d+\\s+\\d+\\s+\\S+ ns/op\\s+(\\S+) cpu-µs/op"
	fig abs:2 "benchmarks.md: Caddy handler with Redis, $case, allocs" $bm "^\\| $dq \\| \\S+ \\| (\\d+) \\|" \
		busykeys "$busykeys" "^BenchmarkServeHTTPRedisBusyKeys/$case-\\d+\\s.*?(\\d+) allocs/op"
done
gredisstore="go test -run '^\$' -bench RedisStoreGoRedis -benchtime 200000x -benchmem ./caddymodule"
fig abs:1 "benchmarks.md: go-redis store, allocs per decision" $bm 'RedisStoreGoRedis.*?allocates\s+(\d+)\s+times' \
	gredisstore "$gredisstore" '^BenchmarkRedisStoreGoRedis-\d+\s.*?(\d+) allocs/op'


costs="cd scripts/yaegitest && go test -run '^\$' -bench InterpretedCosts ."
while read -r bench re; do
	fig @tol:25/1000 "benchmarks.md: yaegi statement, $bench, µs" $bm "$re" \
		costs "$costs" "^BenchmarkInterpretedCosts/$bench-\\d+\\s.*?(\\S+) ns/stmt"
done <<'END'
function a\s+function\s+call\s+about\s+(\S+)\s+µs
method a\s+method\s+call\s+about\s+(\S+)\s+µs
interface through\s+an\s+interface\s+(\S+)\s+µs
defer `defer`\s+about\s+(\S+)\s+µs
time.Now standard\s+library\s+(\S+)\s+µs
SplitHostPort standard\s+library\s+(\S+)\s+µs
END
redisinterp="cd scripts/yaegitest && go test -run '^\$' -bench RedisInterpreted -benchtime 30000x ."
fig @tol:25 "benchmarks.md: yaegi through Redis, pooled, CPU µs" $bm 'decision\s+through\s+shared/resp\s+costs\s+(\d+)\s+µs' \
	redisinterp "$redisinterp" '^BenchmarkRedisInterpreted/pooled-\d+\s.*?(\S+) cpu-µs/decision'
fig @tol:25 "benchmarks.md: yaegi through Redis, pipelined, CPU µs" $bm 'pooled\s+and\s+(\d+)\s+µs\s+auto-pipelined' \
	redisinterp "$redisinterp" '^BenchmarkRedisInterpreted/pipelined-\d+\s.*?(\S+) cpu-µs/decision'
fig @tol:25 "benchmarks.md: yaegi through Redis, pooled, decisions/s" $bm 'limiter\),\s+([\d,]+)\s+and' \
	redisinterp "$redisinterp" '^BenchmarkRedisInterpreted/pooled-\d+\s.*?(\S+) decisions/s'
fig @tol:25 "benchmarks.md: yaegi through Redis, pipelined, decisions/s" $bm 'limiter\),\s+[\d,]+\s+and\s+([\d,]+)\s+decisions/s' \
	redisinterp "$redisinterp" '^BenchmarkRedisInterpreted/pipelined-\d+\s.*?(\S+) decisions/s'

# count_status in Redis (docs/redis.md): calls exact, the server's CPU and
# the latency within 25% of the doc's range of runs.
countstatus="go test -run '^\$' -bench RedisCountStatus -benchtime 20000x -count 3 ./shared/redisstore"
while read -r bench label; do
	fig exact "redis.md: count_status, $bench, script calls" docs/redis.md "^\\| $label \\| (\\d+) \\|" \
		countstatus "$countstatus" "^BenchmarkRedisCountStatus/$bench-\\d+\\s.*?(\\S+) calls/req"
	fig @tol:25 "redis.md: count_status, $bench, Redis CPU µs" docs/redis.md "^\\| $label \\| \\d+ \\| (\\S+) µs \\|" \
		countstatus "$countstatus" "^BenchmarkRedisCountStatus/$bench-\\d+\\s.*?(\\S+) redis-µs/req"
done <<'END'
take a zone without `count_status`
reserved `count_status`, the status counts
refunded `count_status`, refunded
END
fig @tol:25/1000 "redis.md: count_status, latency, one call" docs/redis.md 'sees\s+it\):\s+(\S+)\s+µs\s+per\s+request\s+for\s+one\s+call' \
	countstatus "$countstatus" '^BenchmarkRedisCountStatus/(?:take|reserved)-\d+\s+\d+\s+(\S+) ns/op'
fig @tol:25/1000 "redis.md: count_status, latency, two calls" docs/redis.md 'for\s+one\s+call\s+and\s+(\S+)\s+µs\s+for\s+two' \
	countstatus "$countstatus" '^BenchmarkRedisCountStatus/refunded-\d+\s+\d+\s+(\S+) ns/op'


# scripts/bench-caddy.sh: its table, as the doc's text block shows it.
# caddycol LABEL I: a regex of the table line of LABEL (four columns, on
# one line), capturing its column I (0: req/s, 1: vs base, 2: CPU, 3:
# efficiency).
caddycol() { printf '^%s(?:[ \t]+\S+){%d}[ \t]+(\S+)(?:[ \t]+\S+){%d}[ \t]*$' "$(qre "$1")" "$2" $((3 - $2)); }
caddy='scripts/bench-caddy.sh'
for label in 'plain Caddy (base)' 'rate_limit, all allowed' '  the same, headers none' 'rate_limit, denial-heavy (429)'; do
	i=0
	for what in 'req/s=@tol:25' 'req/s vs base=tol:5' 'Caddy CPU µs/request=@tol:25' 'efficiency vs base=tol:5'; do
		re=$(caddycol "$label" $i)
		fig "${what#*=}" "benchmarks.md: Caddy, ${label# *}, ${what%%=*}" $bm "$re" caddy "$caddy" "$re"
		i=$((i + 1))
	done
done
# The Redis site's table, from a run of its own: the doc's lines after
# its command.
caddyredis='WC_BENCH_SITES=redis scripts/bench-caddy.sh'
after='(?s)\$ WC_BENCH_SITES=redis scripts/bench-caddy\.sh\n.*?'
for label in 'plain Caddy, random X-Key (base)' 'rate_limit, store redis, X-Key'; do
	i=0
	for what in 'req/s=@tol:25' 'req/s vs base=tol:5' 'Caddy CPU µs/request=@tol:25' 'efficiency vs base=tol:5'; do
		re=$(caddycol "$label" $i)
		fig "${what#*=}" "benchmarks.md: Caddy, ${label# *}, ${what%%=*}" $bm "$after(?-s)$re" caddyredis "$caddyredis" "$re"
		i=$((i + 1))
	done
done
fig @tol:25 "benchmarks.md: Caddy, redis-server CPU µs/request" $bm '^\s+redis-server CPU µs/request\s+(\S+)$' \
	caddyredis "$caddyredis" '^\s+redis-server CPU µs/request\s+(\S+)$'
fig exact "benchmarks.md: Caddy, keys in Redis" $bm '^\s+\((\d+) keys in Redis' caddyredis "$caddyredis" '^\s+\((\d+) keys in Redis'
fig @tol:25 "benchmarks.md: Caddy, EVALSHA µs per call" $bm 'EVALSHA (\S+) µs per call, \S+ calls per read\)$' \
	caddyredis "$caddyredis" 'EVALSHA (\S+) µs per call, \S+ calls per read\)$'
fig @tol:25 "benchmarks.md: Caddy, calls per read" $bm 'EVALSHA \S+ µs per call, (\S+) calls per read\)$' \
	caddyredis "$caddyredis" 'EVALSHA \S+ µs per call, (\S+) calls per read\)$'
for label in 'rate_limit, all allowed' '  the same, headers none' 'rate_limit, denial-heavy (429)'; do
	q=$(qre "$label")
	fig tol:40 "benchmarks.md: Caddy, pprof share, ${label# *}" $bm "(?s)Share of Caddy CPU.*?^$q[ \\t]+(\\S+)%\$" \
		caddy "$caddy" "(?s)Share of Caddy CPU.*?^$q[ \\t]+(\\S+)%\$"
done
q=$(qre 'rate_limit, store redis, X-Key')
fig tol:40 "benchmarks.md: Caddy, pprof share, store redis, X-Key" $bm "(?s)Share of Caddy CPU.*?^$q[ \\t]+(\\S+)%\$" \
	caddyredis "$caddyredis" "(?s)Share of Caddy CPU.*?^$q[ \\t]+(\\S+)%\$"
fig tol:5 "benchmarks.md: prose, denial-heavy vs plain" $bm 'denial-heavy\s+site\s+serves\s+(\S+)\s+of\s+plain' \
	caddy "$caddy" "$(caddycol 'rate_limit, denial-heavy (429)' 1)"
fig tol:40 "benchmarks.md: prose, the handler's share of Caddy's CPU, %" $bm "handler's\\s+own\\s+work\\s+is\\s+about\\s+(\\d+)%" \
	caddy "$caddy" '(?s)Share of Caddy CPU.*?^(?:rate_limit, all allowed|  the same, headers none)[ \t]+(\S+)%$'
prog='if (/^(plain Caddy, random X-Key \(base\)|rate_limit, store redis, X-Key)\s+(?:\S+\s+){2}(\S+)/) { $c{$1} = $2 } END { printf "the Redis site: %.1f µs of Caddy CPU more than the keyed plain site\n", $c{"rate_limit, store redis, X-Key"} - $c{"plain Caddy, random X-Key (base)"} }'
fig @tol:25 "benchmarks.md: prose, Caddy's CPU for Redis, µs" $bm 'Caddy\s+spends\s+(\S+)\s+µs\s+more\s+CPU' \
	caddyredis:redis "from caddyredis $(printf %q "$prog")" 'the Redis site: (\S+) µs'
fig tol:5 "benchmarks.md: prose, all allowed vs plain" $bm 'which\s+puts\s+an\s+all-allowed\s+site\s+at\s+(\S+)\s+of\s+plain' \
	caddy "$caddy" "$(caddycol 'rate_limit, all allowed' 1)"
fig tol:5 "benchmarks.md: prose, headers none vs plain" $bm 'default\s+headers\s+and\s+(\S+)\s+with\s+`headers\s+none`' \
	caddy "$caddy" "$(caddycol '  the same, headers none' 1)"
fig tol:5 "benchmarks.md: prose, the Redis site vs plain" $bm "site's\\s+(\\S+)\\s+of\\s+plain\\s+pays" \
	caddyredis "$caddyredis" "$(caddycol 'rate_limit, store redis, X-Key' 1)"
fig @tol:25 "benchmarks.md: prose, redis-server µs" $bm 'keyed\s+plain\s+site,\s+redis-server\s+(\S+)\s+µs' \
	caddyredis "$caddyredis" '^\s+redis-server CPU µs/request\s+(\S+)$'
fig tol:5 "benchmarks.md: prose, Caddy's efficiency with Redis" $bm "Caddy's\\s+efficiency\\s+\\((\\S+)\\)" \
	caddyredis "$caddyredis" "$(caddycol 'rate_limit, store redis, X-Key' 3)"
fig tol:5 "README.md: all-allowed Caddy site vs plain" README.md 'all-allowed\s+Caddy\s+site\s+serves\s+(\S+)\s+of' \
	caddy "$caddy" "$(caddycol 'rate_limit, all allowed' 1)"
fig tol:5 "why.md: all-allowed Caddy site vs plain" docs/why.md 'all-allowed\s+site\s+serves\s+(\S+)\s+of' \
	caddy "$caddy" "$(caddycol 'rate_limit, all allowed' 1)"
fig tol:5 "why.md: headers none vs plain" docs/why.md "requests,\\s+(\\S+)\\s+with\\s+\`headers\\s+none\`" \
	caddy "$caddy" "$(caddycol '  the same, headers none' 1)"

# scripts/bench-traefik.sh: the doc's table row by row (doc label, then
# the script's label).
# The profiles go into the work directory, with the outputs.
traefik='WL_BENCH_PPROF=$WL_FIGURES_OUT/traefik-pprof scripts/bench-traefik.sh'
while IFS='|' read -r dlabel slabel; do
	dq=$(qre "$dlabel")
	sq=$(qre "$slabel")
	fig @tol:65 "benchmarks.md: Traefik, $slabel, req/s" $bm "^\\| $dq \\| (\\S+) \\|" \
		traefik "$traefik" "^$sq[ \\t]+(\\S+)[ \\t]+\\S+x\\s"
	fig @tol:65 "benchmarks.md: Traefik, $slabel, CPU µs" $bm "^\\| $dq \\| \\S+ \\| (\\S+) \\|" \
		traefik "$traefik" "^$sq[ \\t]+\\S+[ \\t]+\\S+x[ \\t]+(\\S+)"
	if [[ $slabel == windowlimit* && $slabel != *denial* || $slabel == trivial* || $slabel == least* ]]; then
		fig tol:25 "benchmarks.md: Traefik, $slabel, vs built-in" $bm "^\\| $dq \\| \\S+ \\| \\S+ \\| (\\S+) \\|" \
			traefik "$traefik" "^$sq[ \\t]+\\S+[ \\t]+\\S+x[ \\t]+\\S+[ \\t]+(\\S+)"
		fig tol:25 "benchmarks.md: Traefik, $slabel, by CPU" $bm "^\\| $dq \\| \\S+ \\| \\S+ \\| \\S+ \\| (\\S+) \\|" \
			traefik "$traefik" "^$sq[ \\t]+\\S+[ \\t]+\\S+x[ \\t]+\\S+[ \\t]+\\S+[ \\t]+(\\S+)"
	fi
done <<'END'
plain router|plain router
built-in `rateLimit` (remote address)|built-in rateLimit (remote address)
windowlimit, defaults (remote address, legacy headers)|windowlimit, defaults (remote address, legacy)
built-in, `ipStrategy: {depth: 1}`|built-in, ipStrategy depth 1
windowlimit, `ipStrategy: {depth: 1}`|windowlimit, ipStrategy depth 1
built-in, `ipStrategy.excludedIPs`|built-in, ipStrategy excludedIPs
windowlimit, `ipStrategy.excludedIPs`|windowlimit, ipStrategy excludedIPs
built-in, `ipStrategy.ipv6Subnet: 56`|built-in, ipStrategy ipv6Subnet 56
windowlimit, `ipStrategy.ipv6Subnet: 56`|windowlimit, ipStrategy ipv6Subnet 56
built-in, `requestHeaderName`|built-in, requestHeaderName
windowlimit, `requestHeaderName`|windowlimit, requestHeaderName
built-in, `requestHost`|built-in, requestHost
windowlimit, `requestHost`|windowlimit, requestHost
windowlimit, `headers: ietf`|windowlimit, headers ietf
windowlimit, `headers: both`|windowlimit, headers both
windowlimit, `headers: none`|windowlimit, headers none
windowlimit, `limit: 100000000`|windowlimit, limit 100000000
windowlimit, `window: 87600h`, `limit: 100000000`|windowlimit, window 87600h, limit 100000000
windowlimit, `dryRun`|windowlimit, dryRun
windowlimit, `countStatus`|windowlimit, countStatus
windowlimit, `overrides`|windowlimit, overrides
built-in + `redis`|built-in + redis
windowlimit + `redis` (a hot key: leases)|windowlimit + redis
built-in + `redis`, 1,000 busy keys|built-in + redis, 1000 keys
windowlimit + `redis`, 1,000 busy keys|windowlimit + redis, 1000 keys
trivial yaegi plugin (the floor)|trivial yaegi plugin (the floor)
least sliding window, yaegi (`scripts/floorplugin`)|least sliding window, yaegi (its floor)
windowlimit, denial-heavy (429)|windowlimit, denial-heavy (429)
END
# The prose and the README: the same run's ratios.
vsref() { printf '^%s[ \\t]+\\S+[ \\t]+\\S+x[ \\t]+\\S+[ \\t]+(\\S+)' "$(qre "$1")"; }
bycpu() { printf '^%s[ \\t]+\\S+[ \\t]+\\S+x[ \\t]+\\S+[ \\t]+\\S+[ \\t]+(\\S+)' "$(qre "$1")"; }
fig tol:25 "benchmarks.md: prose, countStatus vs built-in" $bm '(\S+)\s+with\s+`countStatus`\s+and\s+\S+\s+with\s+`overrides`' \
	traefik "$traefik" "$(vsref 'windowlimit, countStatus')"
fig tol:25 "benchmarks.md: prose, overrides vs built-in" $bm '\S+\s+with\s+`countStatus`\s+and\s+(\S+)\s+with\s+`overrides`' \
	traefik "$traefik" "$(vsref 'windowlimit, overrides')"
fig tol:25 "benchmarks.md: prose, redis vs built-in" $bm 'admitted\s+from\s+a\s+lease,\s+(\S+)\s+of\s+the\s+built-in' \
	traefik "$traefik" "$(vsref 'windowlimit + redis')"
fig tol:25 "benchmarks.md: prose, trivial plugin vs built-in" $bm 'trivial\s+yaegi\s+plugin\s+serves\s+(\S+)\s+of' \
	traefik "$traefik" "$(vsref 'trivial yaegi plugin (the floor)')"
fig tol:25 "benchmarks.md: prose, least window vs built-in" $bm 'key\s+but\s+the\s+remote\s+address\)\s+(\S+),' \
	traefik "$traefik" "$(vsref 'least sliding window, yaegi (its floor)')"
fig tol:25 "benchmarks.md: prose, least window by CPU" $bm 'remote\s+address\)\s+\S+,\s+(\S+)\s+by\s+CPU' \
	traefik "$traefik" "$(bycpu 'least sliding window, yaegi (its floor)')"
fig tol:25 "README.md: Traefik plugin, defaults, vs built-in" README.md 'Traefik\s+plugin\s+serves\s+(\S+)\s+of' \
	traefik "$traefik" "$(vsref 'windowlimit, defaults (remote address, legacy)')"
fig tol:25 "why.md: Traefik plugin, defaults, vs built-in" docs/why.md "serves[ \\t]+(\\S+)[ \\t]+of[ \\t]+the[ \\t]+built-in's[ \\t]+requests[ \\t]+with" \
	traefik "$traefik" "$(vsref 'windowlimit, defaults (remote address, legacy)')"
fig tol:25 "why.md: Traefik plugin, depth 1, vs built-in" docs/why.md 'defaults\s+and\s+(\S+)\s+behind\s+a\s+load\s+balancer' \
	traefik "$traefik" "$(vsref 'windowlimit, ipStrategy depth 1')"
fig tol:25 "why.md: Traefik plugin, defaults, by CPU" docs/why.md 'same\s+source;\s+(\S+)\s+and\s+\S+\s+by\s+CPU' \
	traefik "$traefik" "$(bycpu 'windowlimit, defaults (remote address, legacy)')"
fig tol:25 "why.md: Traefik plugin, depth 1, by CPU" docs/why.md 'same\s+source;\s+\S+\s+and\s+(\S+)\s+by\s+CPU' \
	traefik "$traefik" "$(bycpu 'windowlimit, ipStrategy depth 1')"
fig tol:25 "why.md: trivial plugin vs built-in" docs/why.md 'trivial\s+yaegi\s+plugin\s+serves\s+(\S+),' \
	traefik "$traefik" "$(vsref 'trivial yaegi plugin (the floor)')"
fig tol:25 "why.md: least window vs built-in" docs/why.md 'yaegi\s+plugin\s+can\s+be\s+(\S+)\s+\(' \
	traefik "$traefik" "$(vsref 'least sliding window, yaegi (its floor)')"
# The prose's spread over the in-memory configurations but countStatus
# and overrides, from the same table.
prog='if (/^windowlimit, / && !/countStatus|overrides|denial/) { @f = split; push @r, $f[-2]; push @c, $f[-1] }
END { @r = sort { $a <=> $b } @r; @c = sort { $a <=> $b } @c; print "in memory: vs built-in $r[0] to $r[-1], by CPU $c[0] to $c[-1]\n" }'
spread="from traefik $(printf %q "$prog")"
fig tol:25 "benchmarks.md: prose, in memory vs built-in, least" $bm 'serves\s+(\S+)\s+to\s+\S+\s+of\s+the\s+requests\s+of\s+the\s+built-in' \
	traefik:spread "$spread" 'vs built-in (\S+) to'
fig tol:25 "benchmarks.md: prose, in memory vs built-in, most" $bm 'serves\s+\S+\s+to\s+(\S+)\s+of\s+the\s+requests\s+of\s+the\s+built-in' \
	traefik:spread "$spread" 'vs built-in \S+ to (\S+),'
fig tol:25 "benchmarks.md: prose, in memory by CPU, least" $bm '`overrides`\s+\((\S+)\s+to\s+\S+\s+by\s+CPU\)' \
	traefik:spread "$spread" 'by CPU (\S+) to'
fig tol:25 "benchmarks.md: prose, in memory by CPU, most" $bm '`overrides`\s+\(\S+\s+to\s+(\S+)\s+by\s+CPU\)' \
	traefik:spread "$spread" 'by CPU \S+ to (\S+)$'
# What the interpreter costs Traefik's CPU, as a multiple of the plain
# router's: within the 15% the doc states.
prog='if (/^(plain router|trivial yaegi plugin|least sliding window, yaegi|windowlimit, defaults|windowlimit \+ redis)\s/) { $n = $1; @f = split; $c{$n} = $f[-3] }
END { printf "%s: %.2f times the CPU of the plain router\n", $_, $c{$_} / $c{"plain router"} for grep { $_ ne "plain router" } sort keys %c }'
vsplain="from traefik $(printf %q "$prog")"
while IFS='|' read -r docre label; do
	fig tol:15 "benchmarks.md: prose, $label, CPU vs plain" $bm "$docre" \
		traefik:vsplain "$vsplain" "^$(qre "$label"): (\\S+) times"
done <<'END'
almost\s+nothing\s+cost\s+Traefik\s+(\S+)\s+times|trivial yaegi plugin
the\s+least\s+sliding\s+window\s+(\S+)\s+times|least sliding window, yaegi
windowlimit\s+with\s+its\s+defaults\s+(\S+)\s+times|windowlimit, defaults
leases\)\s+(\S+)\s+times|windowlimit + redis
END
# The CPU profiles (WL_BENCH_PPROF): per request, in the plugin, in
# allocating and in GC marking, windowlimit then the trivial plugin.
n='([\d.]+)'
x='[\d.]+'
while IFS='|' read -r label docre outre; do
	fig @tol:40 "benchmarks.md: pprof, $label, µs" $bm "$docre" traefik "$traefik" "$outre"
done <<END
windowlimit, in the plugin|in\s+this\s+run\s+$n,\s+$x\s+and\s+$x\s+µs\s+for\s+windowlimit|^plugin\s+$x\s+$x\s+$n\s
windowlimit, allocating|in\s+this\s+run\s+$x,\s+$n\s+and\s+$x\s+µs\s+for\s+windowlimit|^plugin(?:\s+$x){3}\s+$n\s
windowlimit, GC marking|in\s+this\s+run\s+$x,\s+$x\s+and\s+$n\s+µs\s+for\s+windowlimit|^plugin(?:\s+$x){4}\s+$n
trivial plugin, in the plugin|against\s+$n,\s+$x\s+and\s+$x\s+for\s+the\s+trivial|^trivial\s+$x\s+$x\s+$n\s
trivial plugin, allocating|against\s+$x,\s+$n\s+and\s+$x\s+for\s+the\s+trivial|^trivial(?:\s+$x){3}\s+$n\s
trivial plugin, GC marking|against\s+$x,\s+$x\s+and\s+$n\s+for\s+the\s+trivial|^trivial(?:\s+$x){4}\s+$n
END

# scripts/bench-redis.sh 100000 3: throughput, what a call costs Redis in
# µs and in instructions (callgrind), the keys it leaves.
redisbench='scripts/bench-redis.sh 100000 3'
fig @tol:40 "benchmarks.md: Redis, pipelined ceiling, decisions/s" $bm '^\| `redis-cli --pipe`[^|]*\| ([\d,]+) \|' \
	redisbench "$redisbench" '^\d+ decisions in \d+ ms: (\d+) decisions/s'
while read -r bench label; do
	q=$(qre "$label")
	fig @tol:40 "benchmarks.md: Redis, $bench, decisions/s" $bm "^\\| $q \\| ([\\d,]+) \\|" \
		redisbench "$redisbench" "^BenchmarkRedisStore$bench-\\d+\\s.*?(\\S+) decisions/s"
	fig tol:25 "benchmarks.md: Redis, $bench, of the ceiling" $bm "^\\| $q \\| [\\d,]+ \\| (\\S+) \\|" \
		redisbench "$redisbench" "^BenchmarkRedisStore$bench-\\d+\\s.*?(\\S+) of the pipelined ceiling"
	fig exact "benchmarks.md: Redis, $bench, round trips per decision" $bm 'commandstats`,\s+same\s+command\):\s+(\S+)\s+for\s+every' \
		redisbench "$redisbench" "^BenchmarkRedisStore$bench-\\d+\\s.*?(\\S+) roundtrips/decision"
done <<'END'
Resp/pooled shared/resp (Traefik's client), pooled
Resp/pipelined shared/resp, auto-pipelined
GoRedis go-redis v9 (Caddy's client), pipelined
END
fig tol:25 "benchmarks.md: Redis, prose, the clients' share of the ceiling" $bm 'Go\s+clients\s+reach\s+(\S+\s+to\s+\S+)\s+of' \
	redisbench "$redisbench" '^BenchmarkRedisStore\S+\s.*?(\S+) of the pipelined ceiling'
fig @tol:40 "benchmarks.md: Redis, prose, µs per call" $bm 'costs\s+Redis\s+(\S+\s+to\s+\S+)\s+µs\s+per\s+call' \
	redisbench "$redisbench" '^(?:busy|fresh)\s+ours\s+median\s+(\S+) µs'
while read -r script label; do
	q=$(qre "$label")
	fig @tol:40 "benchmarks.md: Redis, $script, busy, µs per call" $bm "^\\| $q \\| (\\S+) \\|" \
		redisbench "$redisbench" "^busy\\s+$script\\s+median\\s+(\\S+) µs"
	fig @tol:40 "benchmarks.md: Redis, $script, fresh, µs per call" $bm "^\\| $q \\| \\S+ \\| [^|]* \\| (\\S+) \\|" \
		redisbench "$redisbench" "^fresh\\s+$script\\s+median\\s+(\\S+) µs"
done <<'END'
ours windowlimit's script
ours-denied windowlimit's script, a client over its limit (denied)
hash the previous script (a hash per key)
fixed fixed window, `INCR` + `PEXPIRE` when new
fixed-always fixed window, `INCR` + `PEXPIRE` every call (fixed-always)
END
for script in ours ours-denied hash; do
	case $script in
	ours) label="windowlimit's script" ;;
	ours-denied) label="windowlimit's script, a client over its limit (denied)" ;;
	hash) label='the previous script (a hash per key)' ;;
	esac
	q=$(qre "$label")
	fig tol:25 "benchmarks.md: Redis, $script, busy, vs fixed" $bm "^\\| $q \\| \\S+ \\| (\\S+) /" \
		redisbench "$redisbench" "^busy\\s+$script/fixed\\s+(\\S+)x fixed,"
	fig tol:25 "benchmarks.md: Redis, $script, busy, vs fixed-always" $bm "^\\| $q \\| \\S+ \\| \\S+ / (\\S+) \\|" \
		redisbench "$redisbench" "^busy\\s+$script/fixed\\s+\\S+x fixed, (\\S+)x fixed-always"
	fig tol:25 "benchmarks.md: Redis, $script, fresh, vs fixed" $bm "^\\| $q \\| \\S+ \\| [^|]* \\| \\S+ \\| (\\S+) /" \
		redisbench "$redisbench" "^fresh\\s+$script/fixed\\s+(\\S+)x fixed,"
	fig tol:25 "benchmarks.md: Redis, $script, fresh, vs fixed-always" $bm "^\\| $q \\| \\S+ \\| [^|]* \\| \\S+ \\| \\S+ / (\\S+) \\|" \
		redisbench "$redisbench" "^fresh\\s+$script/fixed\\s+\\S+x fixed, (\\S+)x fixed-always"
done
fig @tol:40 "benchmarks.md: Redis, a script that returns at once, µs" $bm 'returns\s+at\s+once\s+costs\s+(\S+)\s+µs' \
	redisbench "$redisbench" '^a script that returns at once: (\S+) µs per call'
fig exact "benchmarks.md: Redis, a busy key's bytes" $bm 'a\s+string\s+of\s+(\d+)\s+bytes\s+with' \
	redisbench "$redisbench" '^one busy key after its run, ours: (\d+) bytes'
fig exact "benchmarks.md: Redis, a busy key's sub-windows written" $bm 'bytes\s+with\s+(\d+)\s+of\s+11\s+sub-windows' \
	redisbench "$redisbench" '^one busy key after its run, ours: \d+ bytes, (\d+) of 11'
fig exact "benchmarks.md: Redis, the hash script's fields" $bm 'a\s+hash\s+of\s+(\d+)\s+fields' \
	redisbench "$redisbench" "the hash script's: (\\d+) fields"
# callgrind: instruction counts, which the machine's load does not move
# (fresh keys are drawn at random: within 2%).
while read -r script label; do
	q=$(qre "$label")
	within=2
	[[ $script != ours-denied ]] || within=8 # how far the Retry-After walk goes depends on the fill
	fig tol:$within "benchmarks.md: callgrind, $script, busy, instructions" $bm "^\\| $q \\| ([\\d,]+) \\|" \
		redisbench "$redisbench" "^busy\\s+$script\\s+(\\d+) instructions per call"
	fig tol:2 "benchmarks.md: callgrind, $script, fresh, instructions" $bm "^\\| $q \\| [\\d,]+ \\| [^|]* \\| ([\\d,]+) \\|" \
		redisbench "$redisbench" "^fresh\\s+$script\\s+(\\d+) instructions per call"
	[[ $script == ours || $script == ours-denied || $script == hash || $script == floor ]] || continue
	fig tol:$((within + 1)) "benchmarks.md: callgrind, $script, busy, vs fixed" $bm "^\\| $q \\| [\\d,]+ \\| (\\S+) /" \
		redisbench "$redisbench" "(?s)== instructions per call.*?^busy\\s+$script/fixed\\s+(\\S+)x fixed,"
	fig tol:$((within + 1)) "benchmarks.md: callgrind, $script, busy, vs fixed-always" $bm "^\\| $q \\| [\\d,]+ \\| \\S+ / (\\S+) \\|" \
		redisbench "$redisbench" "(?s)== instructions per call.*?^busy\\s+$script/fixed\\s+\\S+x fixed, (\\S+)x"
	fig tol:3 "benchmarks.md: callgrind, $script, fresh, vs fixed" $bm "^\\| $q \\| [\\d,]+ \\| [^|]* \\| [\\d,]+ \\| (\\S+) /" \
		redisbench "$redisbench" "(?s)== instructions per call.*?^fresh\\s+$script/fixed\\s+(\\S+)x fixed,"
	fig tol:3 "benchmarks.md: callgrind, $script, fresh, vs fixed-always" $bm "^\\| $q \\| [\\d,]+ \\| [^|]* \\| [\\d,]+ \\| \\S+ / (\\S+) \\|" \
		redisbench "$redisbench" "(?s)== instructions per call.*?^fresh\\s+$script/fixed\\s+\\S+x fixed, (\\S+)x"
done <<'END'
ours windowlimit's script
ours-denied windowlimit's script, a client over its limit (denied)
hash the previous script (a hash per key)
fixed fixed window
fixed-always fixed-always
floor the floor: `TIME` + `GET` + `SETRANGE` + four integers
empty a script that returns at once
END
fig exact "benchmarks.md: Redis, MEMORY USAGE, log key" $bm '(\d+)\s+for\s+a\s+`log`\s+key\s+holding' \
	redisbench "$redisbench" '^rl:login:\{alice@example.com\} \(log, 10 timestamps\): (\d+) bytes'
fig exact "benchmarks.md: Redis, MEMORY USAGE, IPv4 key (bench-redis.sh)" $bm '39-byte\s+string\):\s+(\d+)\s+bytes\s+for\s+an\s+IPv4' \
	redisbench "$redisbench" '^rl:api:\{203\.0\.113\.77\}: \d+-byte string, (\d+) bytes'
fig @tol:25 "README.md: a Redis decision, µs of Redis CPU" README.md 'one\s+script\s+call\s+of\s+(\S+\s+to\s+\S+)\s+µs' \
	redisbench "$redisbench" '^(?:busy|fresh)\s+ours\s+median\s+(\S+) µs'
fig @tol:25 "why.md: a Redis decision, µs of Redis CPU" docs/why.md 'one\s+script\s+call\s+of\s+(\S+\s+to\s+\S+)\s+µs' \
	redisbench "$redisbench" '^(?:busy|fresh)\s+ours\s+median\s+(\S+) µs'

# scripts/bench-lease.sh: the four parts' tables and the summary.
lease='scripts/bench-lease.sh'
while IFS='|' read -r dlabel slabel; do
	dq=$(qre "$dlabel")
	sq=$(qre "$slabel")
	fig @tol:25 "benchmarks.md: leases, hot key, $slabel, req/s" $bm "^\\| $dq \\| ([\\d,]+) \\|" \
		lease "$lease" "(?s)^1\\. One hot key.*?^$sq\\s+(\\S+)"
	fig tol:5 "benchmarks.md: leases, hot key, $slabel, vs memory" $bm "^\\| $dq \\| [\\d,]+ \\| (\\S+) \\|" \
		lease "$lease" "(?s)^1\\. One hot key.*?^$sq\\s+\\S+\\s+(\\S+)"
	[[ $slabel == in* ]] || fig tol:25 "benchmarks.md: leases, hot key, $slabel, calls per request" $bm "^\\| $dq \\| [\\d,]+ \\| \\S+ \\| (\\S+) \\|" \
		lease "$lease" "(?s)^1\\. One hot key.*?^$sq(?:\\s+\\S+){2}\\s+(\\S+)"
	fig @tol:25 "benchmarks.md: leases, hot key, $slabel, CPU µs" $bm "^\\| $dq \\| [\\d,]+ \\| \\S+ \\| \\S+ \\| (\\S+) \\|" \
		lease "$lease" "(?s)^1\\. One hot key.*?^$sq(?:\\s+\\S+){3}\\s+(\\S+)"
	fig tol:5 "benchmarks.md: leases, hot key, $slabel, by CPU" $bm "^\\| $dq \\| [\\d,]+ \\| \\S+ \\| \\S+ \\| \\S+ \\| (\\S+) \\|" \
		lease "$lease" "(?s)^1\\. One hot key.*?^$sq(?:\\s+\\S+){4}\\s+(\\S+)"
done <<'END'
3 Caddy, in memory (no store)|in memory (no store)
3 Caddy, `store redis`, `lease auto`|store redis, lease auto
3 Caddy, `store redis`, `lease off`|store redis, lease off
END
fig @tol:25 "benchmarks.md: leases, strict, the limit" $bm '^\| `strict`, limit ([\d,]+) per 1 s' \
	lease "$lease" '^2\. One hot key, algorithm strict, limit (\d+) per'
for lm in auto off; do
	dq=$(qre "| 3 Caddy, \`lease $lm\` |")
	sq="(?s)^2\\. One hot key.*?^store redis, lease $lm"
	fig @tol:25 "benchmarks.md: leases, strict, lease $lm, offered req/s" $bm "^$dq ([\\d,]+) \\|" lease "$lease" "$sq\\s+(\\S+)"
	fig @tol:25 "benchmarks.md: leases, strict, lease $lm, admitted" $bm "^$dq [\\d,]+ \\| ([\\d,]+) \\|" lease "$lease" "$sq(?:\\s+\\S+){2}\\s+(\\S+)"
	fig @tol:25 "benchmarks.md: leases, strict, lease $lm, most in 1 s" $bm "^$dq [\\d,]+ \\| [\\d,]+ \\| ([\\d,]+) \\|" lease "$lease" "$sq(?:\\s+\\S+){3}\\s+(\\S+)"
	fig tol:40 "benchmarks.md: leases, strict, lease $lm, calls per request" $bm "^$dq [\\d,]+ \\| [\\d,]+ \\| [\\d,]+ \\| (\\S+) \\|" lease "$lease" "$sq(?:\\s+\\S+){4}\\s+(\\S+)"
	fig @tol:25 "benchmarks.md: leases, cold keys, lease $lm, req/s" $bm "^$dq ([\\d,]+) \\| \\S+ \\| \\S+ \\|\$" \
		lease "$lease" "(?s)^3\\. 1000 cold keys.*?^store redis, lease $lm\\s+(\\S+)"
	fig tol:25 "benchmarks.md: leases, cold keys, lease $lm, calls per request" $bm "^$dq [\\d,]+ \\| (\\S+) \\| \\S+ \\|\$" \
		lease "$lease" "(?s)^3\\. 1000 cold keys.*?^store redis, lease $lm\\s+\\S+\\s+(\\S+)"
	fig @tol:25 "benchmarks.md: leases, cold keys, lease $lm, CPU µs" $bm "^$dq [\\d,]+ \\| \\S+ \\| (\\S+) \\|\$" \
		lease "$lease" "(?s)^3\\. 1000 cold keys.*?^store redis, lease $lm(?:\\s+\\S+){2}\\s+(\\S+)"
done
fig tol:5 "benchmarks.md: leases, strict, admitted / limit, lease auto" $bm 'over\s+the\s+limit:\s+(\S+)\s+with\s+`lease\s+auto`' \
	lease "$lease" '^admitted per second of run / limit: lease auto (\S+),'
fig tol:5 "benchmarks.md: leases, strict, admitted / limit, lease off" $bm 'with\s+`lease\s+auto`,\s+(\S+)\s+with\s+`lease\s+off`' \
	lease "$lease" '^admitted per second of run / limit: lease auto \S+, lease off (\S+)'
fig tol:6 "benchmarks.md: leases, cold keys, auto / off by rate" $bm 'ratios:\s+(\S+)\s+by\s+rate' \
	lease "$lease" '^req/s, lease auto / lease off: (\S+)'
fig tol:6 "benchmarks.md: leases, cold keys, auto / off by CPU" $bm 'by\s+rate,\s+(\S+)\s+by\s+CPU\s+\(the' \
	lease "$lease" '^by CPU \(lease off CPU per request / lease auto\): (\S+)'
fig tol:5 "benchmarks.md: leases, cold keys, the rounds' ratios" $bm 'by\s+CPU\s+\(the\s+rounds\s+ranged\s+from\s+(\S+\s+to\s+\S+)\)' \
	lease "$lease" '(?:lease auto / lease off: \S+ \(each round:|\G(?<!^)) ([\d.]+)(?=[ )])' 
while IFS='|' read -r dlabel slabel; do
	dq=$(qre "$dlabel")
	sq="(?s)^4\\. Traefik.*?^$(qre "$slabel")"
	fig @tol:25 "benchmarks.md: leases, Traefik, $slabel, req/s" $bm "^\\| $dq \\| ([\\d,]+) \\|" lease "$lease" "$sq\\s+(\\S+)"
	fig tol:5 "benchmarks.md: leases, Traefik, $slabel, vs built-in" $bm "^\\| $dq \\| [\\d,]+ \\| (\\S+) \\|" lease "$lease" "$sq\\s+\\S+\\s+(\\S+)"
	fig tol:25 "benchmarks.md: leases, Traefik, $slabel, calls per request" $bm "^\\| $dq \\| [\\d,]+ \\| \\S+ \\| (\\S+) \\|" lease "$lease" "$sq(?:\\s+\\S+){2}\\s+(\\S+)"
	fig @tol:25 "benchmarks.md: leases, Traefik, $slabel, CPU µs" $bm "^\\| $dq \\| [\\d,]+ \\| \\S+ \\| \\S+ \\| (\\S+) \\|" lease "$lease" "$sq(?:\\s+\\S+){3}\\s+(\\S+)"
	fig tol:5 "benchmarks.md: leases, Traefik, $slabel, by CPU" $bm "^\\| $dq \\| [\\d,]+ \\| \\S+ \\| \\S+ \\| \\S+ \\| (\\S+) \\|" lease "$lease" "$sq(?:\\s+\\S+){4}\\s+(\\S+)"
done <<'END'
built-in `rateLimit` + `redis`|built-in rateLimit + redis
windowlimit + `redis`, `lease auto`|windowlimit + redis, lease auto
windowlimit + `redis`, `lease off`|windowlimit + redis, lease off
END
prog='$t = 1 if /^4\. Traefik/; printf "Traefik, lease auto: one script call in %.0f requests\n", 1 / $1 if $t && /^windowlimit \+ redis, lease auto\s+\S+\s+\S+\s+([\d.]+)/'
fig tol:25 "benchmarks.md: leases, prose, Traefik, requests a script call" $bm 'one\s+script\s+call\s+in\s+(\d+)\s+requests' \
	lease:traefik "from lease $(printf %q "$prog")" 'one script call in (\d+) requests'
# The summary block: each goal's figure.
while read -r n tol label; do
	q=$(qre "$n. $label")
	fig "$tol" "benchmarks.md: leases, summary, $n. $label" $bm "^$q\\s+(\\S+)\\s+goal" lease "$lease" "^$q\\s+(\\S+)\\s+goal"
done <<'END'
1 tol:25 hot key: script calls per request, lease auto
1 tol:5 hot key: fleet req/s, lease auto / memory
2 @tol:25 strict, over the limit: most admitted in any 1 s, lease auto
2 @tol:25 strict, over the limit: most admitted in any 1 s, lease off
2 tol:5 strict, over the limit: admitted, lease auto / lease off
3 tol:5 cold keys: calls per request, lease auto
3 tol:6 cold keys: req/s, lease auto / lease off (no drop)
4 tol:5 Traefik: req/s, plugin lease auto / built-in (redis)
END
fig range "benchmarks.md: leases, summary, goals met (of 8)" $bm 'Over\s+runs,\s+(\d+\s+or\s+\d+)\s+of\s+the\s+8\s+goals' lease "$lease" '^(\d+) of 8 goals met'
# The section's opening paragraph, from the same run.
fig tol:25 "benchmarks.md: leases, prose, Caddy calls per request" $bm 'script\s+calls\s+to\s+(\S+)\s+per\s+request\s+in\s+Caddy' \
	lease "$lease" '^1\. hot key: script calls per request, lease auto\s+(\S+)'
fig tol:25 "benchmarks.md: leases, prose, Traefik calls per request" $bm 'per\s+request\s+in\s+Caddy\s+and\s+(\S+)\s+in\s+Traefik' \
	lease "$lease" '(?s)^4\. Traefik.*?^windowlimit \+ redis, lease auto(?:\s+\S+){2}\s+(\S+)'
fig tol:5 "benchmarks.md: leases, prose, Redis / memory" $bm 'three\s+Caddy\s+instances\s+on\s+Redis\s+serve\s+(\S+)\s+of' \
	lease "$lease" '^1\. hot key: fleet req/s, lease auto / memory\s+(\S+)'
fig tol:5 "benchmarks.md: leases, prose, lease off / memory" $bm 'in\s+memory\s+\((\S+)\s+with\s+`lease\s+off`\)' \
	lease "$lease" 'lease off / memory (\S+)\)'
fig tol:5 "benchmarks.md: leases, prose, strict auto / off" $bm 'and\s+admitted\s+(\S+)\s+of\s+what\s+`lease\s+off`\s+did' \
	lease "$lease" '^2\. strict, over the limit: admitted, lease auto / lease off\s+(\S+)'
fig tol:6 "benchmarks.md: leases, prose, cold keys" $bm 'one\s+call\s+each,\s+at\s+(\S+)\s+of\s+`lease\s+off`' \
	lease "$lease" '^req/s, lease auto / lease off: (\S+)'
fig tol:5 "benchmarks.md: leases, prose, cold keys' rounds" $bm 'the\s+rounds\s+ranged\s+from\s+(\S+\s+to\s+\S+?)\);\s+two\s+Traefik' \
	lease "$lease" '(?:lease auto / lease off: \S+ \(each round:|\G(?<!^)) ([\d.]+)(?=[ )])'
fig tol:5 "benchmarks.md: leases, prose, Traefik vs built-in" $bm 'with\s+`redis`\s+\((\S+)\s+by\s+CPU\)' \
	lease "$lease" '^4\. Traefik: req/s, plugin lease auto / built-in \(redis\)\s+\S+\s+goal.*?by CPU (\S+);'
fig tol:5 "benchmarks.md: leases, prose, Traefik by CPU" $bm 'serve\s+(\S+)\s+of\s+Traefik.s\s+built-in' \
	lease "$lease" '^4\. Traefik: req/s, plugin lease auto / built-in \(redis\)\s+(\S+)'

# scripts/bench-flood.sh: one line per host and flood kind.
flood_sh='scripts/bench-flood.sh'
while IFS='|' read -r dlabel host kind; do
	dq=$(qre "$dlabel")
	sq="^\\S*\\s*$host $kind: slipped"
	fig exact "benchmarks.md: flood, $host $kind, limited client admitted" $bm "^\\| $dq \\| (\\d+)/\\d+ \\|" \
		flood_sh "$flood_sh" "$sq (\\d+)/"
	fig abs:5 "benchmarks.md: flood, $host $kind, new clients served (%)" $bm "^\\| $dq \\| [^|]* \\| (\\d+)% \\|" \
		flood_sh "$flood_sh" "$sq [^,]*, new clients (\\d+)% of budget"
	fig @tol:25 "benchmarks.md: flood, $host $kind, flood keys" $bm "^\\| $dq \\| [^|]* \\| [^|]* \\| ([\\d,]+)" \
		flood_sh "$flood_sh" "$sq .*?, flood (\\d+) keys"
	fig @tol:25 "benchmarks.md: flood, $host $kind, CPU µs per request" $bm "^\\| $dq \\| [^|]* \\| [^|]* \\| [^|]* \\| (\\d+) µs \\|" \
		flood_sh "$flood_sh" "$sq .*? (\\d+) µs CPU/req"
	fig tol:25 "benchmarks.md: flood, $host $kind, heap after, MiB" $bm "^\\| $dq \\|(?:[^|]*\\|){4} \\S+ -> (\\S+) MiB \\|" \
		flood_sh "$flood_sh" "$sq .*?, heap \\S+ -> (\\S+) MiB"
done <<'END'
Caddy, fresh|caddy|fresh
Caddy, saturating|caddy|saturating
Traefik plugin, fresh|traefik|fresh
Traefik plugin, saturating|traefik|saturating
Traefik built-in, fresh|builtin|fresh
Traefik built-in, saturating|builtin|saturating
END
fig @tol:25 "README.md: flood size, times max_keys" README.md 'Floods\s+of\s+(\S+\s+to\s+\S+)\s+times\s+`max_keys`' \
	flood_sh "$flood_sh" '^\S*\s*(?:caddy|traefik) \S+: slipped .*?, flood \d+ keys \((\d+)x max_keys'
fig @tol:25 "why.md: flood size, times max_keys" docs/why.md 'floods\s+of\s+(\S+\s+to\s+\S+)\s+times\s+`max_keys`' \
	flood_sh "$flood_sh" '^\S*\s*(?:caddy|traefik) \S+: slipped .*?, flood \d+ keys \((\d+)x max_keys'
fig exact "why.md: flood, the limited client got through" docs/why.md 'at\s+its\s+limit\s+got\s+through\s+(\d+)\s+times\s+under' \
	flood_sh "$flood_sh" '^\S*\s*(?:caddy|traefik) \S+: slipped (\d+)/'
fig exact "README.md: flood, the limited client got through" README.md 'at\s+its\s+limit\s+got\s+through\s+(\d+)\s+times' \
	flood_sh "$flood_sh" '^\S*\s*(?:caddy|traefik) \S+: slipped (\d+)/'

# A run that rewrote the times names this machine as theirs.
if [[ -n ${WL_FIGURES_REWRITE:-} ]] && ((timed_run)) && [[ $here != "$published" ]]; then
	rewrite docs/benchmarks.md "$machine_re" "$here"
	echo "docs/benchmarks.md: times published from machine $here (were: ${published:-none})"
fi

((failed == 0)) || exit 1
