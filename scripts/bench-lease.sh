#!/usr/bin/env bash
# Leases (docs/redis.md, "Hot keys: leases") through the real binaries, on
# loopback, with a throwaway redis-server this script starts, and the
# figures docs/benchmarks.md quotes ("Hot keys across a fleet: leases"):
#
#  1. Hot key, every request allowed: three Caddy instances (built by
#     ./xcaddy.sh) with one zone keyed `static` (window 1s in sub-windows
#     of 100ms, a limit no run reaches), one wrk on each instance at once.
#     Each round runs the fleet in memory (no store), with `store redis {
#     lease auto }` and with `lease off`, in turn. It prints the fleet's
#     requests per second (the three wrk rates summed), their ratio to
#     memory's in the same round, and Redis script calls per request: the
#     EVAL and EVALSHA calls INFO commandstats counted during the run
#     (give-backs included) over the requests wrk counted.
#  2. Strict at about twice the limit: the same fleet, `algorithm strict`,
#     proxying what it admits to scripts/e2e/backend, which records
#     every arrival on its monotonic clock and reports the most arrivals in
#     any interval of 1 s (exact, not in buckets) and the total: what the
#     fleet admitted. The limit per 1 s window is half the rate of the same
#     fleet proxying in memory with a limit it never reaches (the median of
#     3 runs of 2 s), so that the load offered is at least twice it: the
#     memory fleet of part 1 answers without proxying, several times
#     faster than any proxied fleet (WL_LEASE_LIMIT overrides it). Lease
#     auto and lease off alternate.
#  3. Cold keys: the three instances keyed by X-Key, wrk sending a random
#     X-Key of 1000 (as bench-caddy.sh), lease auto against lease off:
#     calls per request (leases must stay out of the way: 1) and the
#     throughput ratio.
#  4. Traefik v3.6.12: two instances, one hot key (the client address,
#     127.0.0.1), every request allowed; this plugin with `redis` (lease
#     auto, and lease off for reference) against Traefik's built-in
#     rateLimit with `redis`, on the same redis-server (the plugin under
#     its own key prefixes). One wrk on each instance at once.
#
# The machine's two cores carry wrk, the proxies, Redis and other work, so
# absolute rates move with the load: every comparison is a ratio of runs
# in the same round (interleaved), and each figure is the median over the
# rounds (the most in any window: the worst round). Beside the rates it
# prints the CPU time the proxies and the redis-server spent per request
# (from /proc), which the neighbours' load moves much less, and the ratios
# by it (the base's CPU per request over the other's: what the rate ratio
# would be with the cores to themselves); the goals stay on the rates. A summary block at the
# end gives each figure with its goal (met / not met); the exit status
# does not depend on them.
#
#   WL_LEASE_SECONDS          length of each measured run of parts 1, 3, 4 (default 4)
#   WL_LEASE_STRICT_SECONDS   length of each run of part 2 (default 5)
#   WL_LEASE_ROUNDS           rounds of each part (default 5)
#   WL_LEASE_CONNS            connections of each wrk (default 16; one wrk
#                             thread each)
#   WL_LEASE_LIMIT            part 2's limit per second (default: half the
#                             proxying memory fleet's rate)
#   WL_LEASE_PARTS            the parts to run (default "1 2 3 4")
#
# With WL_KEEP_WORK set the work directory (configurations, logs, wrk
# outputs) stays.
set -euo pipefail
source "$(dirname "$0")/lib/caddy.sh"
source "$(dirname "$0")/lib/traefik.sh"
source "$(dirname "$0")/lib/redis.sh"
trap wl_cleanup EXIT

SECONDS_EACH=${WL_LEASE_SECONDS:-4}
STRICT_SECONDS=${WL_LEASE_STRICT_SECONDS:-5}
ROUNDS=${WL_LEASE_ROUNDS:-5}
CONNS=${WL_LEASE_CONNS:-16}
LIMIT=${WL_LEASE_LIMIT:-}
PARTS=" ${WL_LEASE_PARTS:-1 2 3 4} "
part() { [[ $PARTS == *" $1 "* ]]; }
HUGE=1000000000 # a limit no run reaches
FLEET=3         # Caddy instances

wl_need wrk:wrk curl:curl ss:iproute2 redis-server:redis-server redis-cli:redis-tools timeout:coreutils
wc_build
# The work directory holds the plugin's copy for Traefik (wt_setup); Caddy's
# autosave and storage go there too, as wc_setup would put them.
wt_setup
export XDG_CONFIG_HOME=$WL_WORK/xdg-config XDG_DATA_HOME=$WL_WORK/xdg-data
wt_start_backend

mapfile -t ports < <(wc_free_ports $((1 + FLEET * 7 + FLEET * 3 + 4)))
wl_redis_start "${ports[0]}"
# Per Caddy instance i: the admin port and the sites of parts 1 and 3 and
# part 2's proxying memory site, then part 2's strict sites, started once
# the limit is known.
ADMIN=() MEM=() AUTO=() OFF=() COLD_AUTO=() COLD_OFF=() PROXY_MEM=() STRICT_ADMIN=() STRICT_AUTO=() STRICT_OFF=()
for ((i = 0; i < FLEET; i++)); do
	b=$((1 + i * 7))
	ADMIN[i]=${ports[b]} MEM[i]=${ports[b + 1]} AUTO[i]=${ports[b + 2]} OFF[i]=${ports[b + 3]}
	COLD_AUTO[i]=${ports[b + 4]} COLD_OFF[i]=${ports[b + 5]} PROXY_MEM[i]=${ports[b + 6]}
	b=$((1 + FLEET * 7 + i * 3))
	STRICT_ADMIN[i]=${ports[b]} STRICT_AUTO[i]=${ports[b + 1]} STRICT_OFF[i]=${ports[b + 2]}
done
b=$((1 + FLEET * 10))
T_WEB=("${ports[b]}" "${ports[b + 1]}") T_PING=("${ports[b + 2]}" "${ports[b + 3]}")

# The wrk script of part 3: a random X-Key of 1000 per request.
cat >"$WL_WORK/keys.lua" <<'EOF'
math.randomseed(os.time())
request = function()
	return wrk.format(nil, nil, { ["X-Key"] = tostring(math.random(1000)) })
end
EOF

# site PORT ZONE STORE KEY LIMIT [ALGORITHM] prints a site of a Caddyfile:
# rate_limit with one zone keyed by KEY, window 1s in sub-windows of 100ms
# (leases live in a sub-window), in memory when STORE is mem, else in the
# redis-server with `lease STORE`; then respond "ok", or, for strict,
# reverse_proxy to the backend, which records the admissions.
site() {
	local port=$1 zone=$2 store=$3 key=$4 limit=$5 algorithm=${6:-sliding} redis= upstream='respond "ok"'
	# on_store_error deny: a failing store denies (parts 1 and 3 stop on a
	# 429), and no_fallbacks checks part 2's instances' metrics.
	[[ $store == mem ]] || redis=$(printf '\t\tstore redis {\n\t\t\taddress 127.0.0.1:%s\n\t\t\tlease %s\n\t\t}\n\t\ton_store_error deny' "$WL_REDIS_PORT" "$store")
	[[ $algorithm != strict ]] || upstream="reverse_proxy 127.0.0.1:$WL_BACKEND_PORT"
	cat <<-EOF
		:$port {
			bind 127.0.0.1
			rate_limit {
				zone $zone {
					key $key
					algorithm $algorithm
					window 1s
					sub_window 100ms
					limit $limit
				}
		$redis
			}
			$upstream
		}
	EOF
}

# no_fallbacks ADMIN... stops the run if a Caddy instance (by its admin
# port) decided a request by on_store_error: its store failed, and a
# figure would measure the failure.
no_fallbacks() {
	local a n
	for a in "$@"; do
		n=$(curl -s --max-time 5 "http://127.0.0.1:$a/metrics" | awk '/^caddy_http_rate_limit_store_fallbacks_total/ {s += $NF} END {print s + 0}')
		[[ $n == 0 ]] || wl_die "Caddy (admin port $a) decided $n requests by on_store_error: the store failed"
	done
}

# caddy_instance FILE ADMIN SITE... writes a Caddyfile of those sites and
# starts Caddy on it.
caddy_instance() {
	local file=$1 admin=$2
	shift 2
	{
		printf '{\n\tadmin 127.0.0.1:%s\n\tpersist_config off\n}\n' "$admin"
		printf '%s\n' "$@"
	} >"$file"
	wc_start "$file" "$admin"
}

# PROCS are the processes whose CPU time measure counts: the running
# part's proxies and the redis-server.
PROCS=()
CLK_TCK=$(getconf CLK_TCK)

# cpu_ticks prints the CPU time (user and system, all threads) PROCS have
# used, in clock ticks.
cpu_ticks() {
	local pid
	for pid in "${PROCS[@]}"; do awk '{print $14 + $15}' "/proc/$pid/stat"; done | awk '{n += $1} END {print n + 0}'
}

# script_calls prints how many script calls (EVAL, EVALSHA and their _ro
# forms) the redis-server has served: the decisions and give-backs sent to
# it.
script_calls() {
	redis-cli -p "$WL_REDIS_PORT" info commandstats | tr -d '\r' |
		awk -F'[:,=]' '/^cmdstat_(eval|evalsha|eval_ro|evalsha_ro):/ {n += $3} END {print n + 0}'
}

# fleet SECONDS LUA URL... runs one wrk (one thread, WL_LEASE_CONNS
# connections) on each URL at once, with the wrk script LUA unless it is
# empty, and prints their sums: "req/s requests non-2xx socket-errors". A
# timeout bounds each wrk in time besides its -d.
fleet() {
	local secs=$1 lua=$2 i=0 url args=() pids=()
	shift 2
	[[ -z $lua ]] || args=(-s "$lua")
	rm -f "$WL_WORK"/wrk.out.*
	for url in "$@"; do
		timeout $((secs + 30)) wrk -t1 -c"$CONNS" -d"${secs}s" --timeout 5s "${args[@]}" "$url" >"$WL_WORK/wrk.out.$i" 2>&1 &
		pids+=($!)
		i=$((i + 1))
	done
	for ((i = 0; i < ${#pids[@]}; i++)); do
		wait "${pids[i]}" || wl_die "wrk failed: $(cat "$WL_WORK/wrk.out.$i")"
	done
	awk -v want=$# '
		/requests in/ {n += $1}
		/^Requests\/sec:/ {r += $2; k++}
		/Non-2xx or 3xx responses:/ {x += $NF}
		/Socket errors:/ {gsub(/,/, ""); e += $4 + $6 + $8 + $10}
		END {if (k != want) exit 1; printf "%.0f %d %d %d\n", r, n, x, e}' "$WL_WORK"/wrk.out.* ||
		wl_die "a wrk printed no rate: $(cat "$WL_WORK"/wrk.out.*)"
}

# measure SECONDS LUA URL... runs fleet and prints "req/s requests non-2xx
# socket-errors script-calls CPU-µs-per-request". The calls are counted
# until 0.3 s after wrk ends, so that the give-backs of the leases that end
# with the last sub-window (100 ms) are counted in this run; the CPU time
# until wrk ends.
measure() {
	local c0 c1 t0 t1 res reqs
	c0=$(script_calls)
	t0=$(cpu_ticks)
	res=$(fleet "$@") || exit 1
	t1=$(cpu_ticks)
	sleep 0.3
	c1=$(script_calls)
	reqs=$(awk '{print $2}' <<<"$res")
	echo "$res $((c1 - c0)) $(awk -v t=$((t1 - t0)) -v hz="$CLK_TCK" -v n="$reqs" 'BEGIN {printf "%.2f", n ? t / hz * 1e6 / n : 0}')"
}

# urls PORTS_ARRAY PATH prints the URL of PATH on each of those ports.
urls() {
	local -n p=$1
	local port
	for port in "${p[@]}"; do echo "http://127.0.0.1:$port$2"; done
}

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -1; }
div() { awk -v a="$1" -v b="$2" 'BEGIN {if (b == 0) print "nan"; else printf "%.4f\n", a / b}'; }

# The summary: one line per goal, and how many were met.
SUMMARY=() MET=0 GOALS=0
# goal LABEL VALUE OP BOUND [NOTE]: OP is >=, <=, or in (BOUND: LOW..HIGH).
goal() {
	local ok
	ok=$(awk -v v="$2" -v op="$3" -v b="$4" 'BEGIN {
		split(b, r, /\.\./)
		print ((op == ">=" && v >= b) || (op == "<=" && v <= b) || (op == "in" && v >= r[1] && v <= r[2])) ? "met" : "NOT MET"}')
	GOALS=$((GOALS + 1))
	[[ $ok != met ]] || MET=$((MET + 1))
	SUMMARY+=("$(printf '%-64s %8s   goal %s %-10s %s' "$1" "$2" "$3" "$4" "$ok${5:+ ($5)}")")
}

echo "windowlimit leases: Caddy $("$WC_CADDY" version | awk '{print $1}'), redis $(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-)," \
	"wrk -t1 -c$CONNS per instance, $ROUNDS interleaved rounds, medians; $(nproc) cores, loopback, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d')"

CADDY_PIDS=() STRICT_PIDS=() TRAEFIK_PIDS=()
if part 1 || part 2 || part 3; then
	for ((i = 0; i < FLEET; i++)); do
		caddy_instance "$WL_WORK/Caddyfile.$i" "${ADMIN[i]}" \
			"$(site "${MEM[i]}" hot_mem mem static $HUGE)" \
			"$(site "${AUTO[i]}" hot_auto auto static $HUGE)" \
			"$(site "${OFF[i]}" hot_off off static $HUGE)" \
			"$(site "${COLD_AUTO[i]}" cold_auto auto '{header.X-Key}' $HUGE)" \
			"$(site "${COLD_OFF[i]}" cold_off off '{header.X-Key}' $HUGE)" \
			"$(site "${PROXY_MEM[i]}" proxy_mem mem static $HUGE strict)"
		CADDY_PIDS+=("${WL_PIDS[-1]}")
	done
fi
PROCS=("${CADDY_PIDS[@]}" "$WL_REDIS_PID")

# ---- 1. one hot key, three Caddy instances, every request allowed
declare -A sites=([mem]=MEM [auto]=AUTO [off]=OFF)
if part 1; then
	declare -A rps=() cpr=() vs_mem=() cpu=() cpu_vs_mem=()
	for mode in mem auto off; do
		# Warm-up: connections, the script loaded in Redis, keys hot.
		mapfile -t u < <(urls "${sites[$mode]}" /)
		measure 1 "" "${u[@]}" >/dev/null
	done
	for ((round = 1; round <= ROUNDS; round++)); do
		declare -A r=() t=()
		for mode in mem auto off; do
			mapfile -t u < <(urls "${sites[$mode]}" /)
			res=$(measure "$SECONDS_EACH" "" "${u[@]}")
			read -r r[$mode] reqs non2xx errs calls t[$mode] <<<"$res"
			((non2xx == 0 && errs == 0)) || wl_die "hot $mode: $non2xx non-2xx responses, $errs socket errors: the limit must allow all"
			# The memory zone makes no call; any counted meanwhile are
			# give-backs of earlier runs that came late.
			[[ $mode != mem ]] || ((calls == 0)) || wl_log "part 1: $calls script calls during the memory run (late give-backs)"
			c=$(div "$calls" "$reqs")
			rps[$mode]+=" ${r[$mode]}" cpr[$mode]+=" $c" cpu[$mode]+=" ${t[$mode]}"
			wl_log "part 1, round $round: $mode ${r[$mode]} req/s (fleet), $calls script calls for $reqs requests ($c per request), ${t[$mode]} µs CPU per request"
		done
		for mode in auto off; do
			vs_mem[$mode]+=" $(div "${r[$mode]}" "${r[mem]}")" cpu_vs_mem[$mode]+=" $(div "${t[mem]}" "${t[$mode]}")"
		done
	done
	echo
	echo "1. One hot key (key static), $FLEET Caddy instances, every request allowed; ${SECONDS_EACH}s runs"
	printf '%-34s %12s %10s %18s %12s %10s\n' "fleet" "req/s (sum)" "vs memory" "calls per request" "CPU µs/req" "by CPU"
	for mode in mem auto off; do
		case $mode in
		mem) label="in memory (no store)" ;;
		auto) label="store redis, lease auto" ;;
		off) label="store redis, lease off" ;;
		esac
		# shellcheck disable=SC2086
		printf '%-34s %12.0f %10s %18s %12.2f %10s\n' "$label" "$(median ${rps[$mode]})" \
			"$([[ $mode == mem ]] && echo 1.000 || printf '%.3f' "$(median ${vs_mem[$mode]})")" \
			"$([[ $mode == mem ]] && echo - || printf '%.4f' "$(median ${cpr[$mode]})")" "$(median ${cpu[$mode]})" \
			"$([[ $mode == mem ]] && echo 1.000 || printf '%.3f' "$(median ${cpu_vs_mem[$mode]})")"
	done
	echo "(CPU: the three Caddy processes and the redis-server; by CPU: memory's CPU per request over this one's, same round)"
	# shellcheck disable=SC2086
	goal "1. hot key: script calls per request, lease auto" "$(printf '%.4f' "$(median ${cpr[auto]})")" "<=" 0.0625 "1/16"
	# shellcheck disable=SC2086
	goal "1. hot key: fleet req/s, lease auto / memory" "$(printf '%.3f' "$(median ${vs_mem[auto]})")" ">=" 0.90 \
		"by CPU $(printf '%.3f' "$(median ${cpu_vs_mem[auto]})"); lease off / memory $(printf '%.3f' "$(median ${vs_mem[off]})")"
fi

# ---- 2. strict at about twice the limit, admissions seen by the backend
if part 2; then
	# Half the rate of the same fleet proxying in memory: wrk, driving the
	# fleet as fast as it answers, offers at least twice the limit (more:
	# a 429 costs less than a proxied request).
	mapfile -t u < <(urls PROXY_MEM /arrive/calibrate)
	calibration=
	if [[ -z $LIMIT ]]; then
		measure 1 "" "${u[@]}" >/dev/null
		for ((i = 0; i < 3; i++)); do
			res=$(measure 2 "" "${u[@]}")
			read -r rate reqs non2xx errs calls _ <<<"$res"
			((non2xx == 0 && errs == 0)) || wl_die "proxying memory fleet: $non2xx non-2xx responses, $errs socket errors"
			calibration+=" $rate"
		done
		# shellcheck disable=SC2086
		LIMIT=$(awk -v r="$(median $calibration)" 'BEGIN {printf "%d\n", r / 2}')
		wl_log "part 2: the proxying memory fleet:$calibration req/s; limit $LIMIT per second"
	fi
	((LIMIT >= 10)) || wl_die "part 2: limit $LIMIT is too small to measure"
	for ((i = 0; i < FLEET; i++)); do
		caddy_instance "$WL_WORK/Caddyfile.strict.$i" "${STRICT_ADMIN[i]}" \
			"$(site "${STRICT_AUTO[i]}" strict_auto auto static "$LIMIT" strict)" \
			"$(site "${STRICT_OFF[i]}" strict_off off static "$LIMIT" strict)"
		STRICT_PIDS+=("${WL_PIDS[-1]}")
	done
	PROCS=("${STRICT_PIDS[@]}" "$WL_REDIS_PID")
	declare -A ssites=([auto]=STRICT_AUTO [off]=STRICT_OFF)
	# arrivals TAG prints the backend's "total N max M" for TAG, M in 1 s.
	arrivals() { curl -s --max-time 10 "http://127.0.0.1:$WL_BACKEND_PORT/arrivals?tag=$1&window=1s" | awk '{print $2, $4}'; }
	for mode in auto off; do
		mapfile -t u < <(urls "${ssites[$mode]}" "/arrive/warm-$mode")
		measure 1 "" "${u[@]}" >/dev/null
	done
	declare -A admitted=() worst=() offered=() scpr=()
	ratio2=
	for ((round = 1; round <= ROUNDS; round++)); do
		declare -A tot=()
		for mode in auto off; do
			# A second of rest first: each run starts on an empty window,
			# the same for both modes.
			sleep 1.1
			mapfile -t u < <(urls "${ssites[$mode]}" "/arrive/$mode-$round")
			res=$(measure "$STRICT_SECONDS" "" "${u[@]}")
			read -r rate reqs non2xx errs calls _ <<<"$res"
			((errs == 0)) || wl_die "strict $mode: $errs socket errors"
			no_fallbacks "${STRICT_ADMIN[@]}"
			res=$(arrivals "$mode-$round")
			read -r tot[$mode] most <<<"$res"
			[[ ${tot[$mode]} =~ ^[0-9]+$ && $most =~ ^[0-9]+$ ]] || wl_die "the backend's report of $mode-$round: '$res'"
			admitted[$mode]+=" ${tot[$mode]}" worst[$mode]+=" $most" offered[$mode]+=" $rate" scpr[$mode]+=" $(div "$calls" "$reqs")"
			wl_log "part 2, round $round: $mode: wrk $rate req/s, $((reqs - non2xx)) 2xx of $reqs; backend: ${tot[$mode]} arrivals, at most $most in any 1 s (limit $LIMIT); $calls script calls"
		done
		ratio2+=" $(div "${tot[auto]}" "${tot[off]}")"
	done
	echo
	echo "2. One hot key, algorithm strict, limit $LIMIT per 1s window (sub-windows of 100ms), $FLEET Caddy instances proxying to the backend; ${STRICT_SECONDS}s runs"
	# shellcheck disable=SC2086
	[[ -z $calibration ]] || echo "   the limit: half the median rate of the same fleet proxying in memory, all allowed: ${calibration# } req/s"
	printf '%-26s %14s %16s %14s %14s %18s\n' "fleet" "offered req/s" "offered / limit" "admitted" "most in 1 s" "calls per request"
	printf '%-26s %14s %16s %14s %14s %18s\n' "" "(wrk, sum)" "" "(backend)" "(worst round)" ""
	for mode in auto off; do
		# shellcheck disable=SC2086
		printf '%-26s %14.0f %16.2f %14.0f %14s %18.4f\n' "store redis, lease $mode" "$(median ${offered[$mode]})" \
			"$(div "$(median ${offered[$mode]})" "$LIMIT")" "$(median ${admitted[$mode]})" "$(maxof ${worst[$mode]})" "$(median ${scpr[$mode]})"
	done
	# shellcheck disable=SC2086
	printf 'admitted per second of run / limit: lease auto %.3f, lease off %.3f\n' \
		"$(div "$(median ${admitted[auto]})" $((STRICT_SECONDS * LIMIT)))" "$(div "$(median ${admitted[off]})" $((STRICT_SECONDS * LIMIT)))"
	# shellcheck disable=SC2086
	goal "2. strict, over the limit: most admitted in any 1 s, lease auto" "$(maxof ${worst[auto]})" "<=" "$LIMIT" "the limit"
	# shellcheck disable=SC2086
	goal "2. strict, over the limit: most admitted in any 1 s, lease off" "$(maxof ${worst[off]})" "<=" "$LIMIT" "the limit"
	# shellcheck disable=SC2086
	goal "2. strict, over the limit: admitted, lease auto / lease off" "$(printf '%.3f' "$(median $ratio2)")" ">=" 0.97
fi

# ---- 3. 1000 cold keys, the same three instances
declare -A csites=([auto]=COLD_AUTO [off]=COLD_OFF)
if part 3; then
	PROCS=("${CADDY_PIDS[@]}" "$WL_REDIS_PID")
	for mode in auto off; do
		mapfile -t u < <(urls "${csites[$mode]}" /)
		measure 1 "$WL_WORK/keys.lua" "${u[@]}" >/dev/null
	done
	declare -A crps=() ccpr=() ccpu=()
	ratio3= cpu_ratio3=
	for ((round = 1; round <= ROUNDS; round++)); do
		declare -A r=() t=()
		for mode in auto off; do
			mapfile -t u < <(urls "${csites[$mode]}" /)
			res=$(measure "$SECONDS_EACH" "$WL_WORK/keys.lua" "${u[@]}")
			read -r r[$mode] reqs non2xx errs calls t[$mode] <<<"$res"
			((non2xx == 0 && errs == 0)) || wl_die "cold $mode: $non2xx non-2xx responses, $errs socket errors"
			c=$(div "$calls" "$reqs")
			crps[$mode]+=" ${r[$mode]}" ccpr[$mode]+=" $c" ccpu[$mode]+=" ${t[$mode]}"
			wl_log "part 3, round $round: $mode ${r[$mode]} req/s (fleet), $calls script calls for $reqs requests ($c per request), ${t[$mode]} µs CPU per request"
		done
		ratio3+=" $(div "${r[auto]}" "${r[off]}")" cpu_ratio3+=" $(div "${t[off]}" "${t[auto]}")"
	done
	echo
	echo "3. 1000 cold keys (a random X-Key per request), $FLEET Caddy instances, every request allowed; ${SECONDS_EACH}s runs"
	printf '%-34s %12s %18s %12s\n' "fleet" "req/s (sum)" "calls per request" "CPU µs/req"
	for mode in auto off; do
		# shellcheck disable=SC2086
		printf '%-34s %12.0f %18.4f %12.2f\n' "store redis, lease $mode" "$(median ${crps[$mode]})" "$(median ${ccpr[$mode]})" "$(median ${ccpu[$mode]})"
	done
	# shellcheck disable=SC2086
	printf 'req/s, lease auto / lease off: %.3f (each round:%s)\n' "$(median $ratio3)" "$ratio3"
	# shellcheck disable=SC2086
	printf 'by CPU (lease off CPU per request / lease auto): %.3f (each round:%s)\n' "$(median $cpu_ratio3)" "$cpu_ratio3"
	# Calls per request come out a little above 1: the requests in flight
	# when wrk stops made their calls but are not in wrk's count.
	# shellcheck disable=SC2086
	goal "3. cold keys: calls per request, lease auto" "$(printf '%.4f' "$(median ${ccpr[auto]})")" in 0.98..1.02 \
		"lease off $(printf '%.4f' "$(median ${ccpr[off]})")"
	# shellcheck disable=SC2086
	goal "3. cold keys: req/s, lease auto / lease off (no drop)" "$(printf '%.3f' "$(median $ratio3)")" ">=" 0.95 \
		"0.95: the noise; by CPU $(printf '%.3f' "$(median $cpu_ratio3)")"
fi

# ---- 4. Traefik: the plugin with redis against the built-in with redis
if part 4; then
	redis="endpoints: [\"127.0.0.1:$WL_REDIS_PORT\"]"
	huge="average: $HUGE\n        burst: $HUGE"
	for ((i = 0; i < 2; i++)); do
		dir=$WL_WORK/traefik-$i
		mkdir -p "$dir"
		cp -r "$WL_WORK/plugins-local" "$dir/"
		# Both instances have the same routers: their middlewares share
		# one key each in Redis, the client address 127.0.0.1.
		wt_dynamic "$dir/dynamic.yml" "$(
			wt_router plugin-auto /plugin-auto plugin-auto
			wt_router plugin-off /plugin-off plugin-off
			wt_router builtin /builtin builtin-redis
		)" "$(
			wt_plugin plugin-auto "window: 1s" "subWindow: 100ms" "limit: 60000" "redis: {$redis, keyPrefix: \"lease-auto:\", lease: auto}" "onStoreError: deny"
			wt_plugin plugin-off "window: 1s" "subWindow: 100ms" "limit: 60000" "redis: {$redis, keyPrefix: \"lease-off:\", lease: off}" "onStoreError: deny"
			printf "    builtin-redis:\n      rateLimit:\n        $huge\n        redis:\n          $redis\n"
		)"
		WL_TRAEFIK_LOG_LEVEL=ERROR wt_start_traefik "${T_WEB[i]}" "${T_PING[i]}" "$dir"
		TRAEFIK_PIDS+=("$WT_TRAEFIK_PID")
		for path in plugin-auto plugin-off builtin; do
			wt_wait_status "http://127.0.0.1:${T_WEB[i]}/$path" 200 || wl_die "traefik $i: /$path never answered 200"
		done
	done
	PATHS=(builtin plugin-auto plugin-off)
	PROCS=("${TRAEFIK_PIDS[@]}" "$WL_REDIS_PID")
	for path in "${PATHS[@]}"; do
		mapfile -t u < <(urls T_WEB "/$path")
		measure 1 "" "${u[@]}" >/dev/null # warm-up: the interpreter's first calls, the scripts
	done
	declare -A trps=() tcpr=() vs_builtin=() tcpu=() cpu_vs_builtin=()
	for ((round = 1; round <= ROUNDS; round++)); do
		declare -A r=() t=()
		for path in "${PATHS[@]}"; do
			mapfile -t u < <(urls T_WEB "/$path")
			res=$(measure "$SECONDS_EACH" "" "${u[@]}")
			read -r r[$path] reqs non2xx errs calls t[$path] <<<"$res"
			if ((non2xx != 0 || errs != 0)); then
				# What Traefik and the plugin logged (a store error, say).
				tail -n 20 "$WL_WORK"/traefik-*/traefik.log >&2
				wl_die "traefik /$path: $non2xx non-2xx responses, $errs socket errors: the comparison would be unfair"
			fi
			c=$(div "$calls" "$reqs")
			trps[$path]+=" ${r[$path]}" tcpr[$path]+=" $c" tcpu[$path]+=" ${t[$path]}"
			wl_log "part 4, round $round: /$path ${r[$path]} req/s (2 instances), $calls script calls for $reqs requests ($c per request), ${t[$path]} µs CPU per request"
		done
		for path in plugin-auto plugin-off; do
			vs_builtin[$path]+=" $(div "${r[$path]}" "${r[builtin]}")" cpu_vs_builtin[$path]+=" $(div "${t[builtin]}" "${t[$path]}")"
		done
	done
	echo
	echo "4. Traefik $WT_VERSION, 2 instances, one hot key (client 127.0.0.1), every request allowed; ${SECONDS_EACH}s runs"
	printf '%-40s %12s %12s %18s %12s %10s\n' "middleware" "req/s (sum)" "vs built-in" "calls per request" "CPU µs/req" "by CPU"
	for path in "${PATHS[@]}"; do
		case $path in
		builtin) label="built-in rateLimit + redis" ;;
		plugin-auto) label="windowlimit + redis, lease auto" ;;
		plugin-off) label="windowlimit + redis, lease off" ;;
		esac
		# shellcheck disable=SC2086
		printf '%-40s %12.0f %12s %18.4f %12.2f %10s\n' "$label" "$(median ${trps[$path]})" \
			"$([[ $path == builtin ]] && echo 1.000 || printf '%.3f' "$(median ${vs_builtin[$path]})")" "$(median ${tcpr[$path]})" \
			"$(median ${tcpu[$path]})" "$([[ $path == builtin ]] && echo 1.000 || printf '%.3f' "$(median ${cpu_vs_builtin[$path]})")"
	done
	echo "(CPU: the two Traefik processes and the redis-server; by CPU: the built-in's CPU per request over this one's, same round)"
	# shellcheck disable=SC2086
	goal "4. Traefik: req/s, plugin lease auto / built-in (redis)" "$(printf '%.3f' "$(median ${vs_builtin[plugin-auto]})")" ">=" 1.0 \
		"by CPU $(printf '%.3f' "$(median ${cpu_vs_builtin[plugin-auto]})"); lease off / built-in $(printf '%.3f' "$(median ${vs_builtin[plugin-off]})")"
fi

echo
echo "Summary (ratios of runs in the same rounds, interleaved; medians of $ROUNDS rounds; most in 1 s: the worst round):"
printf '%s\n' "${SUMMARY[@]}"
echo "$MET of $GOALS goals met"
