#!/usr/bin/env bash
# Redis store figures on this machine, against a throwaway redis-server:
#   - decisions/s through shared/resp and go-redis (50 concurrent callers),
#   - the ceiling: redis-benchmark running the same script by EVALSHA,
#     unpipelined at 50 clients and with -P 16,
#   - what one call of the script costs Redis, against an empty script,
#   - MEMORY USAGE of one key at 10 sub-windows,
#   - round trips per decision (INFO commandstats).
# Usage: scripts/bench-redis.sh [decisions per run, default 200000]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
	--daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
trap 'kill -9 "$(cat "$dir/redis.pid")" 2>/dev/null || true; rm -rf "$dir"' EXIT
cli() { redis-cli -p "$port" "$@"; }
for _ in $(seq 100); do cli ping >/dev/null 2>&1 && break; sleep 0.05; done

# The script text, as compiled into shared/ratelimit/redisscript.go.
sed -n '/^const redisScript = `/,/^`$/p' shared/ratelimit/redisscript.go | sed '1d;$d' >"$dir/script.lua"
sha=$(cli script load "$(cat "$dir/script.lua")")
echo "redis: $(redis-server --version | grep -o 'v=[0-9.]*'), script sha $sha, $(nproc) cores, load average $(cut -d" " -f1-3 /proc/loadavg)"

# One sliding rule: window 60s, sub-window 6s, limit 2^30 (always admitted), cost 1,
# newest-index field -6186 (shapeField: -(6 s * 1024 + 10 sub-windows * 4 + 2 for seconds)).
rule=(0 60000000 6000000 1073741824 1 -6186)

echo
echo "== redis-benchmark, EVALSHA of the same script, 10000 keys"
for pipeline in 1 16; do
	rps=$(redis-benchmark -p "$port" -c 50 -n "$n" -r 10000 -P "$pipeline" -q \
		EVALSHA "$sha" 1 'bench:rb:{203.0.__rand_int__}' 0 "${rule[@]}" | grep -o '[0-9.]* requests per second' | head -1)
	echo "redis-benchmark -c 50 -P $pipeline: $rps"
done

# What one call costs the server as Redis times it, against a script that
# returns at once, measured the same way.
echo
echo "== what one call costs Redis (usec_per_call of EVALSHA in INFO commandstats, -P 16)"
usec() { cli info commandstats | tr -d '\r' | grep '^cmdstat_evalsha:' | grep -o 'usec_per_call=[0-9.]*' | cut -d= -f2; }
cli config resetstat >/dev/null
redis-benchmark -p "$port" -c 50 -n "$n" -r 10000 -P 16 -q \
	EVALSHA "$sha" 1 'bench:rb:{203.0.__rand_int__}' 0 "${rule[@]}" >/dev/null
echo "the script, 10000 keys of a few sub-windows each: $(usec) µs per call"
# Busy keys: 1000 keys under a 1 s window of 100 ms sub-windows, one run
# to fill their sub-windows, then the measured run (the line shows one
# key's field count: 12 when all 11 sub-windows are written).
busy=(0 1000000 100000 1073741824 1 -102441) # shapeField: -(100 ms * 1024 + 10 * 4 + 1 for ms)
redis-benchmark -p "$port" -c 50 -n "$n" -r 1000 -P 16 -q \
	EVALSHA "$sha" 1 'bench:busy:{203.0.__rand_int__}' 0 "${busy[@]}" >/dev/null
cli config resetstat >/dev/null
redis-benchmark -p "$port" -c 50 -n "$n" -r 1000 -P 16 -q \
	EVALSHA "$sha" 1 'bench:busy:{203.0.__rand_int__}' 0 "${busy[@]}" >/dev/null
echo "the script, 1000 busy keys with all 11 sub-windows written ($(cli hlen 'bench:busy:{203.0.000000000007}') fields in one): $(usec) µs per call"
empty=$(cli script load 'return 1')
cli config resetstat >/dev/null
redis-benchmark -p "$port" -c 50 -n "$n" -P 16 -q EVALSHA "$empty" 0 >/dev/null
echo "a script that returns at once: $(usec) µs per call"

echo
echo "== Go clients, 50 goroutines, 10000 keys ($n decisions each)"
export WINDOWLIMIT_BENCH_REDIS="127.0.0.1:$port"
go test -run '^$' -bench 'BenchmarkRedisStore' -benchtime "${n}x" ./shared/ratelimit ./caddymodule |
	grep -E '^Benchmark' | awk '{ printf "%-30s", $1; for (i = 3; i <= NF; i += 2) printf "  %s %s", $i, $(i+1); print "" }'

echo
echo "== memory per key at 10 sub-windows (MEMORY USAGE)"
t0=1760000000000000
for key in 'rl:api:{203.0.113.77}' 'rl:api:{2001:db8:1234:5678::/64}'; do
	for i in $(seq 0 10); do
		cli evalsha "$sha" 1 "$key" $((t0 + i * 6000000)) "${rule[@]}" >/dev/null
	done
	echo "$key: $(cli hlen "$key") fields, $(cli memory usage "$key") bytes ($(cli object encoding "$key"))"
done
key='rl:login:{alice@example.com}'
for i in $(seq 1 10); do
	cli evalsha "$sha" 1 "$key" $((t0 + i * 1000)) 3 60000000 60000000 10 1 x >/dev/null
done
echo "$key (log, 10 timestamps): $(cli memory usage "$key") bytes"
