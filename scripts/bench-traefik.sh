#!/usr/bin/env bash
# Throughput of the plugin in a real Traefik v3.6.12 on loopback, in every
# configuration users run, each against Traefik's built-in rateLimit with
# the same sourceCriterion (where the built-in has one: ipStrategy depth,
# excludedIPs and ipv6Subnet, requestHeaderName, requestHost; otherwise
# the built-in keyed by the remote address), side by side in one Traefik.
# Every limited router allows every request (60000 per second: more than
# wrk sends here; the built-in with a huge average and burst). Also a plain
# router, this plugin rejecting nearly every request, the references of
# scripts/floorplugin (the interpreter's floor: a trivial yaegi plugin that
# takes a mutex, increments a map entry and sets one header; and the least
# sliding window a yaegi plugin can be, which no limiter gets under), and,
# on one throwaway redis-server, this plugin with `redis` against the
# built-in with `redis`: on one hot key (the remote address, where the
# plugin's leases admit most requests), and on 1,000 busy keys (both keyed
# by X-Key, which wrk sends at random from 1,000 per request; a 1 s window
# of 100 ms sub-windows, so every key's every sub-window is written), with
# their floor, the least per-request Redis counter a yaegi plugin can be
# (one INCR a request on a pooled connection, scripts/floorplugin). The
# inFlight routers (a slot per request, 1000 a key: never refused here) are
# compared with the same plugin router without inFlight.
#
# Every request carries "X-Forwarded-For: 198.51.100.1, 203.0.113.7" (the
# web entry point trusts loopback, as one behind a load balancer trusts
# it) and "X-Api-Key: key-0123456789", whatever the router.
#
# Each round visits every router in turn, so that a noisy neighbour on a
# shared machine disturbs all of them alike; the table prints the median of
# the rounds: requests per second, and the CPU time Traefik spent per
# request (the steadier figure: other processes change the throughput far
# more than what a request costs Traefik), then each plugin router's ratio
# to its built-in router of the same run. With 32 routers, 5 rounds of 3 s
# take about 8 minutes (after the one Traefik build).
#
#   WL_BENCH_SECONDS   length of each measured run (default 3)
#   WL_BENCH_ROUNDS    rounds over the routers (default 5)
#   WL_BENCH_CONNS     wrk connections (default 32)
#   WL_BENCH_ONLY      a regular expression: only the routers whose path
#                      matches it, with plain (say "depth|plain|builtin$")
#   WL_BENCH_PPROF     a directory: after the rounds, take 10 s CPU profiles
#                      of Traefik (api.debug) under load on /plugin, /trivial
#                      and /plugin-redis into it, and print their top entries
#   WL_BENCH_PPROF_PATHS the routers WL_BENCH_PPROF profiles (default
#                      "plugin trivial plugin-redis")
set -euo pipefail
source "$(dirname "$0")/lib/traefik.sh"
source "$(dirname "$0")/lib/redis.sh"
trap wl_cleanup EXIT

SECONDS_EACH=${WL_BENCH_SECONDS:-3}
ROUNDS=${WL_BENCH_ROUNDS:-5}
CONNS=${WL_BENCH_CONNS:-32}
PPROF=${WL_BENCH_PPROF:-}
PPROF_PATHS=${WL_BENCH_PPROF_PATHS:-plugin trivial plugin-redis}
XFF="198.51.100.1, 203.0.113.7"
APIKEY=key-0123456789

# The routers, one per line: path, its reference router ("-" for none),
# its name in the table.
ROUTERS=$(
	cat <<-'EOF'
		plain - plain router
		builtin - built-in rateLimit (remote address)
		plugin builtin windowlimit, defaults (remote address, legacy)
		builtin-depth - built-in, ipStrategy depth 1
		plugin-depth builtin-depth windowlimit, ipStrategy depth 1
		builtin-excluded - built-in, ipStrategy excludedIPs
		plugin-excluded builtin-excluded windowlimit, ipStrategy excludedIPs
		builtin-v6subnet - built-in, ipStrategy ipv6Subnet 56
		plugin-v6subnet builtin-v6subnet windowlimit, ipStrategy ipv6Subnet 56
		builtin-header - built-in, requestHeaderName
		plugin-header builtin-header windowlimit, requestHeaderName
		builtin-host - built-in, requestHost
		plugin-host builtin-host windowlimit, requestHost
		plugin-ietf builtin windowlimit, headers ietf
		plugin-both builtin windowlimit, headers both
		plugin-none builtin windowlimit, headers none
		plugin-biglimit builtin windowlimit, limit 100000000
		plugin-bigwindow builtin windowlimit, window 87600h, limit 100000000
		plugin-dryrun builtin windowlimit, dryRun
		plugin-countstatus builtin windowlimit, countStatus
		plugin-overrides builtin windowlimit, overrides
		builtin-redis - built-in + redis
		plugin-redis builtin-redis windowlimit + redis
		builtin-redis-keys - built-in + redis, 1000 keys
		plugin-redis-keys builtin-redis-keys windowlimit + redis, 1000 keys
		redis-floor-keys builtin-redis-keys least Redis counter, yaegi, 1000 keys
		plugin-inflight plugin windowlimit, inFlight 1000 (vs defaults)
		plugin-inflight-redis plugin-redis windowlimit + redis, inFlight 1000 (vs + redis)
		plugin-inflight-redis-keys plugin-redis-keys windowlimit + redis, inFlight 1000, 1000 keys (vs + redis, 1000 keys)
		trivial builtin trivial yaegi plugin (the floor)
		window-floor builtin least sliding window, yaegi (its floor)
		deny - windowlimit, denial-heavy (429)
	EOF
)
PATHS=()
declare -A REF LABEL
while read -r path ref label; do
	if [[ -n ${WL_BENCH_ONLY:-} && $path != plain && ! $path =~ $WL_BENCH_ONLY ]]; then
		continue
	fi
	PATHS+=("$path")
	REF[$path]=$ref
	LABEL[$path]=$label
done <<<"$ROUTERS"

wl_need wrk:wrk curl:curl redis-server:redis-server redis-cli:redis-tools
wt_setup
wt_start_backend

# The references, scripts/floorplugin laid out as a second local plugin:
# the trivial plugin and the least sliding window.
FLOOR=$WL_WORK/plugins-local/src/example.com/floor
mkdir -p "$FLOOR"
cp "$WL_ROOT/scripts/floorplugin/floor.go" "$WL_ROOT/scripts/floorplugin/.traefik.yml" "$FLOOR/"
read -r WEB PING API REDIS < <(wt_free_ports 4 | paste -sd' ')
# The wrk script of the *-keys routers: a random X-Key of 1000 per request.
cat >"$WL_WORK/keys.lua" <<'EOF'
math.randomseed(os.time())
request = function()
	return wrk.format(nil, nil, { ["X-Key"] = tostring(math.random(1000)) })
end
EOF
wl_redis_start "$REDIS"

# builtin NAME [SOURCE] prints a built-in rateLimit that allows everything.
builtin() {
	printf '    %s:\n      rateLimit:\n        average: 1000000000\n        burst: 1000000000\n' "$1"
	[[ -z ${2:-} ]] || printf '        %s\n' "$2"
}
allow=("window: 1s" "limit: 60000")
wt_dynamic "$WL_WORK/dynamic.yml" "$(
	for path in "${PATHS[@]}"; do
		if [[ $path == plain ]]; then
			wt_router plain /plain
		else
			wt_router "$path" "/$path" "$path"
		fi
	done
)" "$(
	builtin builtin
	wt_plugin plugin "${allow[@]}"
	builtin builtin-depth "sourceCriterion: {ipStrategy: {depth: 1}}"
	wt_plugin plugin-depth "${allow[@]}" "sourceCriterion: {ipStrategy: {depth: 1}}"
	builtin builtin-excluded "sourceCriterion: {ipStrategy: {excludedIPs: [10.0.0.0/8, 192.168.0.0/16]}}"
	wt_plugin plugin-excluded "${allow[@]}" "sourceCriterion: {ipStrategy: {excludedIPs: [10.0.0.0/8, 192.168.0.0/16]}}"
	builtin builtin-v6subnet "sourceCriterion: {ipStrategy: {ipv6Subnet: 56}}"
	wt_plugin plugin-v6subnet "${allow[@]}" "sourceCriterion: {ipStrategy: {ipv6Subnet: 56}}"
	builtin builtin-header "sourceCriterion: {requestHeaderName: X-Api-Key}"
	wt_plugin plugin-header "${allow[@]}" "sourceCriterion: {requestHeaderName: X-Api-Key}"
	builtin builtin-host "sourceCriterion: {requestHost: true}"
	wt_plugin plugin-host "${allow[@]}" "sourceCriterion: {requestHost: true}"
	wt_plugin plugin-ietf "${allow[@]}" "headers: ietf"
	wt_plugin plugin-both "${allow[@]}" "headers: both"
	wt_plugin plugin-none "${allow[@]}" "headers: none"
	wt_plugin plugin-biglimit "window: 1s" "limit: 100000000"
	wt_plugin plugin-bigwindow "window: 87600h" "limit: 100000000"
	wt_plugin plugin-dryrun "${allow[@]}" "dryRun: true"
	wt_plugin plugin-countstatus "${allow[@]}" 'countStatus: ["500-599"]'
	wt_plugin plugin-overrides "${allow[@]}" 'overrides: ["198.51.100.0/24=10", "partner=unlimited"]'
	builtin builtin-redis "redis: {endpoints: [\"127.0.0.1:$REDIS\"]}"
	# onStoreError deny: a failing store answers 429, which the run stops on.
	wt_plugin plugin-redis "${allow[@]}" "redis: {endpoints: [\"127.0.0.1:$REDIS\"]}" 'onStoreError: deny'
	builtin builtin-redis-keys "sourceCriterion: {requestHeaderName: X-Key}
        redis: {endpoints: [\"127.0.0.1:$REDIS\"]}"
	wt_plugin plugin-redis-keys "${allow[@]}" "sourceCriterion: {requestHeaderName: X-Key}" \
		"redis: {endpoints: [\"127.0.0.1:$REDIS\"]}" 'onStoreError: deny'
	wt_plugin plugin-inflight "${allow[@]}" "inFlight: 1000"
	wt_plugin plugin-inflight-redis "${allow[@]}" "inFlight: 1000" "redis: {endpoints: [\"127.0.0.1:$REDIS\"]}" 'onStoreError: deny'
	wt_plugin plugin-inflight-redis-keys "${allow[@]}" "inFlight: 1000" "sourceCriterion: {requestHeaderName: X-Key}" \
		"redis: {endpoints: [\"127.0.0.1:$REDIS\"]}" 'onStoreError: deny'
	printf '    trivial:\n      plugin:\n        floor: {}\n'
	printf '    window-floor:\n      plugin:\n        floor: {window: true}\n'
	printf '    redis-floor-keys:\n      plugin:\n        floor: {redis: "127.0.0.1:%s"}\n' "$REDIS"
	wt_plugin deny "window: 1m" "limit: 1"
)"
static= eps=
if [[ -n $PPROF ]]; then
	mkdir -p "$PPROF"
	static=$(printf 'api:\n  insecure: true\n  debug: true')
	eps=traefik=127.0.0.1:$API
fi
WL_TRAEFIK_LOG_LEVEL=ERROR WL_TRAEFIK_EXTRA_PLUGINS="floor:example.com/floor" WL_TRAEFIK_EXTRA_STATIC="$static" \
	WL_TRAEFIK_EXTRA_ENTRYPOINTS="$eps" WL_TRAEFIK_TRUST_LOOPBACK=1 wt_start_traefik "$WEB" "$PING"
for path in "${PATHS[@]}"; do
	want=200
	[[ $path != deny ]] || want=429
	wt_wait_status "http://127.0.0.1:$WEB/$path" $want || wl_die "/$path never answered $want"
done

# measure PATH SECONDS runs wrk against PATH and prints its requests per
# second, the CPU time Traefik spent per request in microseconds, and how
# many responses were not 2xx.
CLK_TCK=$(getconf CLK_TCK)
traefik_ticks() { awk '{print $14 + $15}' "/proc/$WT_TRAEFIK_PID/stat"; }
measure() {
	local before after out script=()
	[[ $1 != *-keys ]] || script=(-s "$WL_WORK/keys.lua")
	before=$(traefik_ticks)
	out=$(wrk -t1 -c"$CONNS" -d"$2s" -H "X-Forwarded-For: $XFF" -H "X-Api-Key: $APIKEY" "${script[@]}" "http://127.0.0.1:$WEB/$1")
	after=$(traefik_ticks)
	awk -v b="$before" -v a="$after" -v hz="$CLK_TCK" '
		/requests in/ {n = $1}
		/Non-2xx or 3xx responses:/ {non2xx = $NF}
		/^Requests\/sec:/ {rps = $2}
		END {printf "%.0f %.2f %d\n", rps, (a - b) / hz * 1e6 / n, non2xx}' <<<"$out"
}

# median prints the median of its arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

for path in "${PATHS[@]}"; do
	measure "$path" 1 >/dev/null # warm-up: connections, the interpreter's first calls, the Redis script
done
declare -A rps cpu
for ((round = 1; round <= ROUNDS; round++)); do
	for path in "${PATHS[@]}"; do
		read -r r c non2xx < <(measure "$path" "$SECONDS_EACH")
		echo "round $round /$path: $r req/s, $c µs of Traefik CPU per request, $non2xx responses not 2xx" >&2
		if [[ $path != deny && $non2xx != 0 ]]; then
			wl_die "/$path answered $non2xx requests with an error: the comparison would be unfair"
		fi
		rps[$path]+=" $r"
		cpu[$path]+=" $c"
	done
done
for path in "${PATHS[@]}"; do
	# shellcheck disable=SC2086 # the lists are words
	rps[$path]=$(median ${rps[$path]})
	# shellcheck disable=SC2086
	cpu[$path]=$(median ${cpu[$path]})
done

echo
echo "Traefik $WT_VERSION, redis $(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-), wrk -t1 -c$CONNS, ${SECONDS_EACH}s runs, median of $ROUNDS interleaved rounds, $(nproc) cores, loopback, $(date -u '+%Y-%m-%d')"
echo "(vs reference: this router over its built-in with the same source, the floor over the built-in, or inFlight over the same plugin router without it, same run;"
echo " by CPU: the reference's CPU per request over this router's, what the ratio would be with Traefik alone on the cores)"
printf '%-46s %8s %9s %11s %13s %8s\n' "router" "req/s" "vs plain" "CPU µs/req" "vs reference" "by CPU"
for path in "${PATHS[@]}"; do
	ref=${REF[$path]} self=0
	if [[ $ref == - || -z ${rps[$ref]:-} ]]; then
		ref=$path self=1
	fi
	awk -v n="${LABEL[$path]}" -v r="${rps[$path]}" -v c="${cpu[$path]}" -v p="${rps[plain]}" \
		-v rr="${rps[$ref]}" -v rc="${cpu[$ref]}" -v self="$self" '
		BEGIN {
			printf "%-46s %8.0f %8.2fx %11.1f", n, r, r / p, c
			if (self) printf " %13s %8s\n", "-", "-"
			else printf " %13.2f %8.2f\n", r / rr, rc / c
		}'
done

if [[ -n $PPROF ]]; then
	bin=$(wt_traefik)
	# seconds SAMPLE_ARGS... prints the seconds of CPU the profile's
	# samples matching the pprof options account for.
	seconds() {
		go tool pprof -top -nodefraction=0 -nodecount=1000000 "$@" "$bin" "$prof" 2>/dev/null |
			awk '/accounting for/ {v = $5; sub(/,$/, "", v); m = v ~ /ms$/; sub(/m?s$/, "", v); print (m ? v / 1000 : v + 0); exit}'
	}
	echo
	echo "Where Traefik's CPU goes, from 10 s CPU profiles (api.debug) under wrk -t1 -c$CONNS (per request):"
	printf '%-14s %9s %10s %14s %12s %10s
' "router" "req/s" "CPU µs" "in the plugin" "allocating" "GC marking"
	for path in $PPROF_PATHS; do
		prof=$PPROF/$path.cpu.pprof
		script=()
		[[ $path != *-keys ]] || script=(-s "$WL_WORK/keys.lua")
		wrk -t1 -c"$CONNS" -d12s "${script[@]}" "http://127.0.0.1:$WEB/$path" >"$PPROF/$path.wrk" &
		sleep 1
		curl -s --max-time 20 -o "$prof" "http://127.0.0.1:$API/debug/pprof/profile?seconds=10"
		wait $!
		r=$(awk '/^Requests\/sec:/ {print $2}' "$PPROF/$path.wrk")
		# The plugin's own work: under yaegi's wrapper of its ServeHTTP,
		# without the next handler (Traefik's proxy to the backend).
		awk -v p="$path" -v r="$r" -v all="$(seconds)" -v own="$(seconds -focus=genFunctionWrapper -ignore='ReverseProxy|pkg/proxy')" \
			-v alloc="$(seconds -focus='runtime.mallocgc$')" -v gc="$(seconds -focus=gcBgMarkWorker)" \
			'BEGIN {n = r * 10; printf "%-14s %9.0f %10.1f %14.1f %12.1f %10.1f\n", p, r, all / n * 1e6, own / n * 1e6, alloc / n * 1e6, gc / n * 1e6}'
	done
	for path in $PPROF_PATHS; do
		echo
		echo "Top of the CPU profile on /$path ($PPROF/$path.cpu.pprof):"
		go tool pprof -top -nodecount=15 "$bin" "$PPROF/$path.cpu.pprof" 2>/dev/null | sed -n '/flat%/,$p'
	done
fi
