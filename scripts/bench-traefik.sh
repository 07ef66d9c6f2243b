#!/usr/bin/env bash
# Throughput of the plugin in a real Traefik v3.6.12 on loopback, side by
# side in one Traefik: a plain router; Traefik's built-in rateLimit with a
# huge limit; this plugin with everything allowed (60000 per second: more
# than wrk sends here, and within the plugin's precomputed header values);
# this plugin rejecting nearly every request; the interpreter's floor, a
# trivial yaegi plugin that takes a mutex, increments a map entry and sets
# one header; and, on one throwaway redis-server, this plugin with `redis`
# against the built-in rateLimit with `redis`, both allowing everything.
#
# Each round visits every router in turn, so that a noisy neighbour on a
# shared machine disturbs all of them alike; the table prints the median of
# the rounds: requests per second, and the CPU time Traefik spent per
# request (the steadier figure: other processes change the throughput far
# more than what a request costs Traefik). Then the ratios the issue sets
# goals for.
#
#   WL_BENCH_SECONDS   length of each measured run (default 4)
#   WL_BENCH_ROUNDS    rounds over the seven routers (default 5)
#   WL_BENCH_CONNS     wrk connections (default 32)
#   WL_BENCH_PPROF     a directory: after the rounds, take 10 s CPU profiles
#                      of Traefik (api.debug) under load on /plugin, /trivial
#                      and /plugin-redis into it, and print their top entries
set -euo pipefail
source "$(dirname "$0")/traefik-lib.sh"
source "$(dirname "$0")/redis-e2e.sh"
trap wl_cleanup EXIT

SECONDS_EACH=${WL_BENCH_SECONDS:-4}
ROUNDS=${WL_BENCH_ROUNDS:-5}
CONNS=${WL_BENCH_CONNS:-32}
PPROF=${WL_BENCH_PPROF:-}
PATHS=(plain builtin plugin deny trivial plugin-redis builtin-redis)

wl_need wrk:wrk curl:curl redis-server:redis-server redis-cli:redis-tools
wt_setup
wt_start_backend

# The reference: a trivial yaegi plugin, laid out as a second local plugin.
TRIVIAL=$WL_WORK/plugins-local/src/example.com/trivial
mkdir -p "$TRIVIAL"
cat >"$TRIVIAL/.traefik.yml" <<-YAML
	displayName: trivial
	type: middleware
	import: example.com/trivial
	summary: a mutex, a map increment and one header
	testData: {}
YAML
cat >"$TRIVIAL/trivial.go" <<-'GO'
	package trivial

	import (
		"context"
		"net/http"
		"sync"
	)

	type Config struct{}

	func CreateConfig() *Config { return &Config{} }

	type counter struct {
		next http.Handler
		mu   sync.Mutex
		n    map[string]int
	}

	func New(ctx context.Context, next http.Handler, config *Config, name string) (http.Handler, error) {
		return &counter{next: next, n: map[string]int{}}, nil
	}

	func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.n[r.RemoteAddr]++
		c.mu.Unlock()
		w.Header().Set("X-Count", "1")
		c.next.ServeHTTP(w, r)
	}
GO
read -r WEB PING API REDIS < <(wt_free_ports 4 | paste -sd' ')
wl_redis_start "$REDIS"

huge='average: 1000000000\n        burst: 1000000000'
wt_dynamic "$WL_WORK/dynamic.yml" "$(
	wt_router plain /plain
	wt_router builtin /builtin builtin-limit
	wt_router plugin /plugin plugin-allow
	wt_router deny /deny plugin-deny
	wt_router trivial /trivial trivial
	wt_router plugin-redis /plugin-redis plugin-redis
	wt_router builtin-redis /builtin-redis builtin-redis
)" "$(
	printf "    builtin-limit:\n      rateLimit:\n        $huge\n"
	wt_plugin plugin-allow "window: 1s" "limit: 60000"
	wt_plugin plugin-deny "window: 1m" "limit: 1"
	printf '    trivial:\n      plugin:\n        trivial: {}\n'
	wt_plugin plugin-redis "window: 1s" "limit: 60000" "redis: {endpoints: [\"127.0.0.1:$REDIS\"]}"
	printf "    builtin-redis:\n      rateLimit:\n        $huge\n        redis:\n          endpoints: [\"127.0.0.1:$REDIS\"]\n"
)"
static= eps=
if [[ -n $PPROF ]]; then
	mkdir -p "$PPROF"
	static=$(printf 'api:\n  insecure: true\n  debug: true')
	eps=traefik=127.0.0.1:$API
fi
WL_TRAEFIK_LOG_LEVEL=ERROR WL_TRAEFIK_EXTRA_PLUGINS="trivial:example.com/trivial" WL_TRAEFIK_EXTRA_STATIC="$static" \
	WL_TRAEFIK_EXTRA_ENTRYPOINTS="$eps" wt_start_traefik "$WEB" "$PING"
for path in plain builtin plugin trivial plugin-redis builtin-redis; do
	wt_wait_status "http://127.0.0.1:$WEB/$path" 200 || wl_die "/$path never answered 200"
done
wt_wait_status "http://127.0.0.1:$WEB/deny" 429 || wl_die "/deny never answered 429"

# measure PATH SECONDS runs wrk against PATH and prints its requests per
# second, the CPU time Traefik spent per request in microseconds, and how
# many responses were not 2xx.
CLK_TCK=$(getconf CLK_TCK)
traefik_ticks() { awk '{print $14 + $15}' "/proc/$WT_TRAEFIK_PID/stat"; }
measure() {
	local before after out
	before=$(traefik_ticks)
	out=$(wrk -t1 -c"$CONNS" -d"$2s" "http://127.0.0.1:$WEB/$1")
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
printf '%-36s %9s %9s %12s %9s\n' "router" "req/s" "vs plain" "CPU µs/req" "over plain"
row() {
	awk -v n="$1" -v r="${rps[$2]}" -v c="${cpu[$2]}" -v p="${rps[plain]}" -v cp="${cpu[plain]}" \
		'BEGIN {printf "%-36s %9.0f %8.2fx %12.1f %9.1f\n", n, r, r/p, c, c-cp}'
}
row "plain router" plain
row "built-in rateLimit (huge limit)" builtin
row "windowlimit, all allowed" plugin
row "windowlimit, denial-heavy (429)" deny
row "trivial yaegi plugin (the floor)" trivial
row "windowlimit + redis, all allowed" plugin-redis
row "built-in rateLimit + redis" builtin-redis
echo
# ratio prints the throughput ratio and its steadier estimate from CPU
# time: the other router's CPU per request over this one's (what the
# throughput ratio would be with Traefik alone on the cores).
echo "(by CPU: the other router's CPU per request over this one's)"
ratio() {
	awk -v n="$1" -v a="${rps[$2]}" -v b="${rps[$3]}" -v ca="${cpu[$2]}" -v cb="${cpu[$3]}" -v goal="$4" \
		'BEGIN {printf "%-36s req/s %5.2f   by CPU %5.2f   (goal >= %s)\n", n, a/b, cb/ca, goal}'
}
ratio "windowlimit / built-in" plugin builtin 0.90
ratio "windowlimit / trivial plugin" plugin trivial 0.95
ratio "windowlimit+redis / built-in+redis" plugin-redis builtin-redis 0.80

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
	for path in plugin trivial plugin-redis; do
		prof=$PPROF/$path.cpu.pprof
		wrk -t1 -c"$CONNS" -d12s "http://127.0.0.1:$WEB/$path" >"$PPROF/$path.wrk" &
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
	for path in plugin trivial plugin-redis; do
		echo
		echo "Top of the CPU profile on /$path ($PPROF/$path.cpu.pprof):"
		go tool pprof -top -nodecount=15 "$bin" "$PPROF/$path.cpu.pprof" 2>/dev/null | sed -n '/flat%/,$p'
	done
fi
