#!/usr/bin/env bash
# Redis store figures on this machine, against a throwaway redis-server:
#   - decisions/s through shared/resp and go-redis (50 concurrent callers),
#   - the ceiling: redis-cli --pipe sending the same script by EVALSHA
#     (redis-benchmark cannot: the packed rule argument is binary),
#   - what one call of the script costs Redis (usec_per_call of EVALSHA in
#     INFO commandstats, calls sent by redis-cli --pipe), on busy keys and
#     on fresh ones, against a fixed-window INCR + PEXPIRE script and the
#     previous script (a hash per key, testdata/redisscript-hash.lua), in
#     interleaved rounds, with the median of each and the ratios to the
#     fixed window; then the same calls in instructions (callgrind, when
#     valgrind is installed), with the floor of the script's contract,
#   - MEMORY USAGE of an IPv4, an IPv6 /64 and a log key,
#   - round trips per decision (INFO commandstats).
# Usage: scripts/bench-redis.sh [decisions per run, default 200000] [rounds, default 3]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}
rounds=${2:-3}

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
	--daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
cgpid=
trap 'kill -9 "$(cat "$dir/redis.pid")" $cgpid 2>/dev/null || true; rm -rf "$dir"' EXIT
cli() { redis-cli -p "$port" "$@"; }
for _ in $(seq 100); do cli ping >/dev/null 2>&1 && break; sleep 0.05; done

# The script of every call without a ban or a slot (redisScript in
# shared/redisstore/script.go): script.lua without its extra blocks.
awk '/^[ \t]*-- extra:begin[ \t]*$/ { x = 1; next } /^[ \t]*-- extra:end[ \t]*$/ { x = 0; next } !x' \
	shared/redisstore/script.lua >"$dir/script.lua"
sha=$(cli script load "$(cat "$dir/script.lua")")
echo "redis: $(redis-server --version | grep -o 'v=[0-9.]*'), script sha $sha, $(nproc) cores, load average $(cut -d" " -f1-3 /proc/loadavg)"

# packrule FILE ALG W T N COST SHAPE writes a rule as the script takes it
# (packRule in shared/redisstore/rule.go): binary, so gen reads it
# from FILE as an @FILE argument, and redis-cli -x from its stdin.
packrule() {
	local f=$1
	shift
	python3 -c 'import struct, sys; sys.stdout.buffer.write(struct.pack("<bqqqqq", *map(int, sys.argv[1:])))' "$@" >"$f"
}
# gen FILE COUNT SPACE KEY ARG... writes COUNT commands in RESP for
# redis-cli --pipe (binary-safe, unlike redis-benchmark's arguments): the
# arguments as given, KEY with N replaced by a random number below SPACE,
# an argument @FILE by that file's bytes.
gen() {
	python3 -c '
import random, sys
out, count, space, key = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
args = [open(a[1:], "rb").read() if a.startswith("@") else a.encode() for a in sys.argv[5:]]
bulk = lambda b: b"$%d\r\n%s\r\n" % (len(b), b)
with open(out, "wb") as f:
    for _ in range(count):
        k = key.replace("N", "%012d" % random.randrange(space)).encode()
        parts = [k if a == b"KEY" else a for a in args]
        f.write(b"*%d\r\n" % len(parts) + b"".join(bulk(a) for a in parts))
' "$@"
}
# pipe PORT FILE sends the commands of FILE and fails on any error reply.
pipe() {
	local res
	res=$(redis-cli -p "$1" --pipe <"$2" 2>&1 | tail -1)
	[[ $res == *"errors: 0,"* ]] || {
		echo "redis-cli --pipe: $res" >&2
		exit 1
	}
}
# One sliding rule: window 60s, sub-window 6s, limit 2^30 (always admitted), cost 1,
# shape -6186 (shapeField: -(6 s * 1024 + 10 sub-windows * 4 + 2 for seconds)).
packrule "$dir/rule" 0 60000000 6000000 1073741824 1 -6186

echo
echo "== the script's pipelined ceiling: redis-cli --pipe, EVALSHA on 10000 keys"
gen "$dir/rb" "$n" 10000 'bench:rb:{203.0.N}' EVALSHA "$sha" 1 KEY 0 0 "@$dir/rule"
start=$(date +%s%N)
pipe "$port" "$dir/rb"
end=$(date +%s%N)
ceiling=$((n * 1000000000 / (end - start)))
echo "$n decisions in $(((end - start) / 1000000)) ms: $ceiling decisions/s"

# What one call costs the server as Redis times it. Busy keys: 1000 keys
# under a 1 s window of 100 ms sub-windows, every sub-window written: each
# measured run follows a fill of 1.3 s of the same traffic, and itself
# writes each key about every 10 ms. Fresh keys: a prefix of their own per
# run, drawn from 10^8. The scripts take turns, round after round, so that
# the machine's load falls on all of them alike.
echo
echo "== what one call costs Redis (usec_per_call of EVALSHA in INFO commandstats, redis-cli --pipe, $rounds interleaved rounds)"
usec() { cli info commandstats | tr -d '\r' | grep '^cmdstat_evalsha:' | grep -o 'usec_per_call=[0-9.]*' | cut -d= -f2; }
sed '1{/^$/d}' shared/redisstore/testdata/script-hash.lua >"$dir/hash.lua"
hashsha=$(cli script load "$(cat "$dir/hash.lua")")
# The fixed window: INCR, and PEXPIRE when the key is new (its window
# starts), or on every call.
fixedsha=$(cli script load "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n")
alwayssha=$(cli script load "local n = redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], ARGV[1]) return n")
# The busy rule: 1 s of 100 ms sub-windows, shape -102441 (-(100 ms * 1024
# + 10 * 4 + 1 for ms)); the previous script takes it in decimal.
packrule "$dir/busy" 0 1000000 100000 1073741824 1 -102441
# The same keys at a limit of 5: after the fill, nearly every call is
# denied (ours-denied), as under a flood of a client over its limit.
packrule "$dir/busy-deny" 0 1000000 100000 5 1 -102441
hashbusy=(0 1000000 100000 1073741824 1 -102441 0)
names=(ours ours-denied hash fixed fixed-always)
# cmds FILE COUNT SPACE SCRIPT KEY RULE writes COUNT calls of SCRIPT on
# keys KEY (N random below SPACE), ours with the packed RULE.
cmds() {
	case $4 in
	ours) gen "$1" "$2" "$3" "$5" EVALSHA "$sha" 1 KEY 0 0 "@$6" ;;
	ours-denied) gen "$1" "$2" "$3" "$5" EVALSHA "$sha" 1 KEY 0 0 "@$6-deny" ;;
	# shellcheck disable=SC2086 # the rule's words
	hash) gen "$1" "$2" "$3" "$5" EVALSHA "$hashsha" 1 KEY 0 ${7:-${hashbusy[*]}} ;;
	fixed) gen "$1" "$2" "$3" "$5" EVALSHA "$fixedsha" 1 KEY 1000 ;;
	fixed-always) gen "$1" "$2" "$3" "$5" EVALSHA "$alwayssha" 1 KEY 1000 ;;
	empty) gen "$1" "$2" 1 "$5" EVALSHA "$empty" 0 ;;
	floor) gen "$1" "$2" "$3" "$5" EVALSHA "$floorsha" 1 KEY 0 0 "@$6" ;;
	esac
}
empty=$(cli script load 'return 1')
# The floor of any script with ours's contract: the server's TIME, one
# read, one write in place, a reply of four integers.
floor="local tm = redis.call('TIME') local now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
redis.call('GET', KEYS[1]) redis.call('SETRANGE', KEYS[1], 15, 'abcd') return {1, 1, 1, 1}"
floorsha=$(cli script load "$floor")
cells="local v = redis.call('GET', KEYS[1]) local m, n = 11, 0
if not v then return {0, 0} end
local w = (#v - 19) / (m + 2)
if string.byte(v, 8) >= 128 then w = (#v - 15) / (m + 1) end -- a lean key
for j = 0, m - 1 do if struct.unpack('<I' .. w, v, 16 + w * (1 + j)) > 0 then n = n + 1 end end
return {#v, n}"
declare -A busyus freshus
held= hheld=
for round in $(seq "$rounds"); do
	for s in "${names[@]}"; do
		key="bench:busy:$s:{203.0.N}"
		[[ -e $dir/fill-$s ]] || cmds "$dir/fill-$s" 20000 1000 "$s" "$key" "$dir/busy"
		[[ -e $dir/busy-$s ]] || cmds "$dir/busy-$s" "$n" 1000 "$s" "$key" "$dir/busy"
		cmds "$dir/fresh-$s" "$((n / 2))" 100000000 "$s" "bench:fresh:$s:$round:{N}" "$dir/busy"
		start=$(date +%s%3N)
		while (($(date +%s%3N) - start < 1300)); do pipe "$port" "$dir/fill-$s"; done
		cli config resetstat >/dev/null
		pipe "$port" "$dir/busy-$s"
		busyus[$s]+="$(usec) "
		case $s in # what a busy key holds: every cell of the ring written
		ours)
			held=$(cli eval "$cells" 1 'bench:busy:ours:{203.0.000000000007}' | paste -sd' ' | awk '{ printf "%d bytes, %d of 11 sub-windows written", $1, $2 }')
			held+=", MEMORY USAGE $(cli memory usage 'bench:busy:ours:{203.0.000000000007}') bytes"
			;;
		hash) hheld="$(cli hlen 'bench:busy:hash:{203.0.000000000007}') fields (12: all 11 sub-windows and the newest index)" ;;
		esac
		cli config resetstat >/dev/null
		pipe "$port" "$dir/fresh-$s"
		freshus[$s]+="$(usec) "
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for kind in busy fresh; do
	for s in "${names[@]}"; do
		if [[ $kind == busy ]]; then runs=${busyus[$s]}; else runs=${freshus[$s]}; fi
		med=$(median <<<"$runs")
		printf '%-5s %-13s median %6.2f µs per call  (runs: %s)\n' "$kind" "$s" "$med" "${runs% }"
		declare "med_${kind}_${s//-/_}=$med"
	done
	for s in ours ours-denied hash; do
		m=med_${kind}_${s//-/_}
		printf '%-5s %-13s %.2fx fixed, %.2fx fixed-always\n' "$kind" "$s/fixed" \
			"$(echo "${!m} / $(eval echo "\$med_${kind}_fixed")" | bc -l)" \
			"$(echo "${!m} / $(eval echo "\$med_${kind}_fixed_always")" | bc -l)"
	done
done
echo "one busy key after its run, ours: $held; the hash script's: $hheld"
cmds "$dir/empty" "$n" 1 empty x
cli config resetstat >/dev/null
pipe "$port" "$dir/empty"
echo "a script that returns at once: $(usec) µs per call"


# The same calls counted in instructions: valgrind's callgrind runs a second
# redis-server and counts what runs inside evalShaCommand (the script and
# the commands it calls, not the network), which the machine's load does
# not change. It is some 50 times slower, so its busy keys are 100 keys
# under a 10 s window of 1 s sub-windows (the same 11 cells), filled for
# 12 s, each then written some 15 times a second.
if command -v valgrind >/dev/null && command -v callgrind_control >/dev/null; then
	echo
	echo "== instructions per call (callgrind, inside evalShaCommand; 100 keys, 10 s window, 1 s sub-windows)"
	cgport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
	valgrind --tool=callgrind --collect-atstart=no --toggle-collect=evalShaCommand --callgrind-out-file="$dir/cg.%p" \
		redis-server --port "$cgport" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" >"$dir/valgrind.log" 2>&1 &
	cgpid=$!
	for _ in $(seq 200); do redis-cli -p "$cgport" ping >/dev/null 2>&1 && break; sleep 0.1; done
	cg() { redis-cli -p "$cgport" "$@"; }
	for s in "$sha" "$hashsha" "$fixedsha" "$alwayssha" "$empty" "$floorsha"; do cg script load "$(case $s in
		"$sha") cat "$dir/script.lua" ;; "$hashsha") cat "$dir/hash.lua" ;;
		"$fixedsha") echo "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n" ;;
		"$alwayssha") echo "local n = redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], ARGV[1]) return n" ;;
		"$floorsha") echo "$floor" ;;
		*) echo 'return 1' ;; esac)" >/dev/null; done
	packrule "$dir/slow" 0 10000000 1000000 1073741824 1 -1066 # shapeField: -(1 s * 1024 + 10 * 4 + 2 for s)
	packrule "$dir/slow-deny" 0 10000000 1000000 5 1 -1066
	slow=(0 10000000 1000000 1073741824 1 -1066 0)
	# cgcount FILE CALLS: instructions per call of the calls in FILE.
	cgcount() {
		callgrind_control --zero "$cgpid" >/dev/null 2>&1
		pipe "$cgport" "$1"
		callgrind_control --dump "$cgpid" >/dev/null 2>&1
		local ir
		ir=$(grep -h '^summary:' "$(ls -t "$dir"/cg.* | head -1)" | awk '{ print $2 }')
		echo $((ir / $2))
	}
	declare -A irs
	for s in "${names[@]}" empty floor; do
		key="bench:busy:$s:{203.0.N}"
		cmds "$dir/cgfill" 2000 100 "$s" "$key" "$dir/slow" "${slow[*]}"
		cmds "$dir/cgbusy" 10000 100 "$s" "$key" "$dir/slow" "${slow[*]}"
		cmds "$dir/cgfresh" 5000 100000000 "$s" "bench:fresh:$s:{N}" "$dir/slow" "${slow[*]}"
		start=$(date +%s%3N)
		while [[ $s != empty && $s != floor ]] && (($(date +%s%3N) - start < 12000)); do pipe "$cgport" "$dir/cgfill"; done
		irs[busy_$s]=$(cgcount "$dir/cgbusy" 10000)
		irs[fresh_$s]=$(cgcount "$dir/cgfresh" 5000)
	done
	for kind in busy fresh; do
		for s in "${names[@]}" empty floor; do
			printf '%-5s %-13s %7d instructions per call\n' "$kind" "$s" "${irs[${kind}_$s]}"
		done
		for s in ours ours-denied hash floor; do
			printf '%-5s %-13s %.2fx fixed, %.2fx fixed-always\n' "$kind" "$s/fixed" \
				"$(echo "${irs[${kind}_$s]} / ${irs[${kind}_fixed]}" | bc -l)" "$(echo "${irs[${kind}_$s]} / ${irs[${kind}_fixed-always]}" | bc -l)"
		done
	done
	cg shutdown nosave >/dev/null 2>&1 || true
	wait "$cgpid" 2>/dev/null || true
fi

echo
echo "== Go clients, 50 goroutines, 10000 keys ($n decisions each)"
export WINDOWLIMIT_BENCH_REDIS="127.0.0.1:$port"
go test -run '^$' -bench 'BenchmarkRedisStore' -benchtime "${n}x" ./shared/redisstore ./caddymodule |
	grep -E '^Benchmark' | awk -v ceiling="$ceiling" '{
		printf "%-30s", $1
		r = 0
		for (i = 3; i <= NF; i += 2) {
			printf "  %s %s", $i, $(i+1)
			if ($(i+1) == "decisions/s") r = $i
		}
		if (r) printf "  %.2f of the pipelined ceiling", r / ceiling
		print ""
	}'

echo
echo "== memory per key at 10 sub-windows, 50 requests in each (MEMORY USAGE)"
t0=1760000000000000
# evalok REPLY stops the run on a script call that did not admit (an error
# reply, or a denial): the key's size would not be the one measured.
evalok() {
	[[ $(head -1 <<<"$1") == 1 ]] || {
		echo "the script's reply: $1" >&2
		exit 1
	}
}
packrule "$dir/rule50" 0 60000000 6000000 1073741824 50 -6186 # cost 50: 50 requests in one call
for key in 'rl:api:{203.0.113.77}' 'rl:api:{2001:db8:1234:5678::/64}'; do
	for i in $(seq 0 10); do
		evalok "$(cli -x evalsha "$sha" 1 "$key" $((t0 + i * 6000000)) 0 <"$dir/rule50")"
	done
	echo "$key: $(cli strlen "$key")-byte $(cli type "$key"), $(cli memory usage "$key") bytes ($(cli object encoding "$key"))"
done
key='rl:login:{alice@example.com}'
packrule "$dir/log" 3 60000000 60000000 10 1 0
for i in $(seq 1 10); do
	evalok "$(cli -x evalsha "$sha" 1 "$key" $((t0 + i * 1000)) 0 <"$dir/log")"
done
echo "$key (log, 10 timestamps): $(cli memory usage "$key") bytes"
