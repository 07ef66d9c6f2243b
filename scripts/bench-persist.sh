#!/usr/bin/env bash
# What snapshotting costs requests, through a real Caddy (built by
# ./xcaddy.sh) on loopback: two Caddy processes, each with one zone keyed
# by X-Key (window 1h, a limit no run reaches, max_keys twice the keys,
# so that no shard of the zone fills up and evicts), one
# persisted every second (`persist { interval 1s }`), the other with
# `persist off`. Each is first filled with 100,000 keys (wrk sending X-Key
# k0..k99999 in turn, checked through the keys metric), then the rounds
# alternate between them, the idle one stopped (SIGSTOP) so that it takes
# no CPU: wrk sends a random X-Key of the 100,000 per request, and prints
# requests per second, the 99th percentile latency, and Caddy's CPU time
# per request (from /proc: on a machine shared with other work the rates
# and latencies swing with the neighbours' load, CPU per request much
# less, and it includes the snapshots' work). It prints each
# round, then the medians, the ratios persisted / not persisted of the
# medians and the median of the rounds' own ratios, and the snapshots the
# persisted Caddy wrote meanwhile (its metrics).
#
#   WC_BENCH_KEYS      keys per zone (default 100000)
#   WC_BENCH_SECONDS   length of each measured run (default 10)
#   WC_BENCH_ROUNDS    rounds (default 3)
#   WC_BENCH_CONNS     wrk connections (default 32)
#   WC_BENCH_THREADS   wrk threads (default 1: Caddy gets the other core)
set -euo pipefail
source "$(dirname "$0")/lib/caddy.sh"
trap wl_cleanup EXIT

KEYS=${WC_BENCH_KEYS:-100000}
SECS=${WC_BENCH_SECONDS:-10}
ROUNDS=${WC_BENCH_ROUNDS:-3}
CONNS=${WC_BENCH_CONNS:-32}
THREADS=${WC_BENCH_THREADS:-1}

wl_need wrk:wrk curl:curl ss:iproute2
wc_setup
read -r WEB_ON ADMIN_ON WEB_OFF ADMIN_OFF < <(wc_free_ports 4 | paste -sd' ')

# config WEB ADMIN PERSIST writes a Caddyfile and prints its path.
config() {
	local f=$WL_WORK/Caddyfile.$1
	cat >"$f" <<-EOF
		{
			admin 127.0.0.1:$2
			persist_config off
		}
		:$1 {
			bind 127.0.0.1
			rate_limit {
				zone bench {
					key        {http.request.header.X-Key}
					window     1h
					limit      1000000000
				}
				max_keys $((2 * KEYS))
				$3
			}
			respond "ok"
		}
	EOF
	echo "$f"
}

cat >"$WL_WORK/fill.lua" <<EOF
local i = 0
init = function(args)
	i = tonumber(args[1])
end
request = function()
	i = i + 1
	return wrk.format(nil, nil, { ["X-Key"] = "k" .. (i % $KEYS) })
end
EOF
cat >"$WL_WORK/random.lua" <<EOF
request = function()
	return wrk.format(nil, nil, { ["X-Key"] = "k" .. math.random(0, $KEYS - 1) })
end
EOF

# keys ADMIN prints the keys the zone holds.
keys() { curl -s "http://127.0.0.1:$1/metrics" | awk '/^caddy_http_rate_limit_keys\{zone="bench"\}/ {printf "%d\n", $2}'; }

# fill WEB ADMIN sends requests until the zone holds every key.
fill() {
	local i n sent=0 out
	for i in $(seq $((KEYS / 20000 + 10))); do
		# Each run starts its keys where the previous one stopped.
		out=$(wrk -t1 -c8 -d5s --timeout 5s -s "$WL_WORK/fill.lua" "http://127.0.0.1:$1/" -- "$sent")
		sent=$((sent + $(awk '/requests in/ {print $1}' <<<"$out")))
		n=$(keys "$2")
		((n >= KEYS)) && return 0
	done
	wl_die "the zone on :$1 holds $n keys after the fill, want $KEYS"
}

WC_DATA=$WL_WORK/data-on wc_start "$(config "$WEB_ON" "$ADMIN_ON" "persist {
					directory $WL_WORK/snapshots
					interval 1s
				}")" "$ADMIN_ON"
PID_ON=${WL_PIDS[-1]}
wc_start "$(config "$WEB_OFF" "$ADMIN_OFF" "persist off")" "$ADMIN_OFF"
PID_OFF=${WL_PIDS[-1]}
fill "$WEB_ON" "$ADMIN_ON"
fill "$WEB_OFF" "$ADMIN_OFF"
wl_log "both zones hold $KEYS keys"

# cpu PID prints the CPU time PID used so far, in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run WEB PID prints "requests/s p99-in-µs CPU-µs-per-request" of one wrk
# run against the Caddy PID.
run() {
	local out c0 c1
	c0=$(cpu "$2")
	out=$(wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" --timeout 5s --latency -s "$WL_WORK/random.lua" "http://127.0.0.1:$1/")
	c1=$(cpu "$2")
	awk -v ticks=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" '/Requests\/sec/ {rps = $2}
		/requests in/ {n = $1}
		$1 == "99%" {v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
			p = v * (u == "ms" ? 1000 : u == "s" ? 1000000 : 1)}
		END {printf "%.0f %.0f %.2f\n", rps, p, ticks * 1000000 / hz / n}' <<<"$out"
}

on=() off=()
written0=$(curl -s "http://127.0.0.1:$ADMIN_ON/metrics" | awk '/^caddy_http_rate_limit_snapshots_written_total/ {printf "%d", $2}')
for r in $(seq "$ROUNDS"); do
	kill -STOP "$PID_OFF"
	kill -CONT "$PID_ON"
	sleep 1
	a=$(run "$WEB_ON" "$PID_ON")
	kill -STOP "$PID_ON"
	kill -CONT "$PID_OFF"
	sleep 1
	b=$(run "$WEB_OFF" "$PID_OFF")
	on+=("$a")
	off+=("$b")
	printf 'round %d: persisted every 1s: %s req/s, p99 %s µs, %s µs CPU a request; persist off: %s req/s, p99 %s µs, %s µs CPU a request\n' "$r" ${a} ${b}
done
kill -CONT "$PID_ON"
written=$(curl -s "http://127.0.0.1:$ADMIN_ON/metrics" | awk '/^caddy_http_rate_limit_snapshots_written_total/ {printf "%d", $2}')
failed=$(curl -s "http://127.0.0.1:$ADMIN_ON/metrics" | awk '/^caddy_http_rate_limit_snapshot_failures_total/ {printf "%d", $2}')

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
rps_on=$(printf '%s\n' "${on[@]}" | cut -d' ' -f1 | median)
rps_off=$(printf '%s\n' "${off[@]}" | cut -d' ' -f1 | median)
p99_on=$(printf '%s\n' "${on[@]}" | cut -d' ' -f2 | median)
p99_off=$(printf '%s\n' "${off[@]}" | cut -d' ' -f2 | median)
size=$(stat -c %s "$WL_WORK"/snapshots/*.wlsnap)
printf 'medians of %d rounds, %d keys: persisted every 1s %s req/s p99 %s µs; persist off %s req/s p99 %s µs\n' \
	"$ROUNDS" "$KEYS" "$rps_on" "$p99_on" "$rps_off" "$p99_off"
awk -v a="$rps_on" -v b="$rps_off" -v c="$p99_on" -v d="$p99_off" \
	'BEGIN {printf "ratios of the medians (persisted / off): throughput %.3f, p99 %.2f\n", a / b, c / d}'
cpu_on=$(printf '%s\n' "${on[@]}" | cut -d' ' -f3 | median)
cpu_off=$(printf '%s\n' "${off[@]}" | cut -d' ' -f3 | median)
printf 'Caddy CPU a request, medians: persisted %s µs, off %s µs: ratio %s\n' "$cpu_on" "$cpu_off" "$(awk -v a="$cpu_on" -v b="$cpu_off" 'BEGIN {printf "%.3f", a / b}')"
# ratio I: the median over the rounds of field I's ratio.
ratio() {
	local i
	for i in "${!on[@]}"; do
		awk -v a="$(cut -d' ' -f"$1" <<<"${on[$i]}")" -v b="$(cut -d' ' -f"$1" <<<"${off[$i]}")" 'BEGIN {print a / b}'
	done | median
}
printf 'medians of the rounds'"'"' ratios (persisted / off): throughput %.3f, p99 %.2f, CPU a request %.3f\n' "$(ratio 1)" "$(ratio 2)" "$(ratio 3)"
printf 'snapshots written during the runs: %s (failures %s); the file: %s bytes\n' "$((written - written0))" "${failed:-0}" "$size"
