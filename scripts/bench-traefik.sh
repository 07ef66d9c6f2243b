#!/usr/bin/env bash
# Throughput of the plugin in a real Traefik v3.6.12 on loopback, from one
# run: a plain router, Traefik's built-in rateLimit with a huge limit, this
# plugin with everything allowed (60000 per second: more than wrk sends
# here, and within the plugin's precomputed header values), this plugin
# rejecting nearly every request, and, for reference, the cheapest useful
# yaegi plugin (a map increment and one header). Prints requests per
# second, Traefik's CPU time per request, and the ratios to plain and
# built-in.
#
#   WL_BENCH_SECONDS   length of each measured run (default 10)
#   WL_BENCH_ROUNDS    rounds over the five routers; the best of each is kept (default 1)
#   WL_BENCH_CONNS     wrk connections (default 32)
set -euo pipefail
source "$(dirname "$0")/traefik-lib.sh"
trap wl_cleanup EXIT

SECONDS_EACH=${WL_BENCH_SECONDS:-10}
ROUNDS=${WL_BENCH_ROUNDS:-1}
CONNS=${WL_BENCH_CONNS:-32}

wl_need wrk:wrk curl:curl
wt_setup
wt_start_backend

# The reference: a trivial yaegi plugin, laid out as a second local plugin.
TRIVIAL=$WL_WORK/plugins-local/src/example.com/trivial
mkdir -p "$TRIVIAL"
cat >"$TRIVIAL/.traefik.yml" <<-YAML
	displayName: trivial
	type: middleware
	import: example.com/trivial
	summary: a map increment and one header
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
read -r WEB PING < <(wt_free_ports 2 | paste -sd' ')

wt_dynamic "$WL_WORK/dynamic.yml" "$(
	wt_router plain /plain
	wt_router builtin /builtin builtin-limit
	wt_router plugin /plugin plugin-allow
	wt_router deny /deny plugin-deny
	wt_router trivial /trivial trivial
)" "$(
	printf '    builtin-limit:\n      rateLimit:\n        average: 1000000000\n        burst: 1000000000\n'
	wt_plugin plugin-allow "window: 1s" "limit: 60000"
	wt_plugin plugin-deny "window: 1m" "limit: 1"
	printf '    trivial:\n      plugin:\n        trivial: {}\n'
)"
WL_TRAEFIK_LOG_LEVEL=ERROR WL_TRAEFIK_EXTRA_PLUGINS="trivial:example.com/trivial" wt_start_traefik "$WEB" "$PING"
for path in plain builtin plugin trivial; do
	wt_wait_status "http://127.0.0.1:$WEB/$path" 200 || wl_die "/$path never answered 200"
done
wt_wait_status "http://127.0.0.1:$WEB/deny" 429 || wl_die "/deny never answered 429"

# measure PATH SECONDS runs wrk against PATH and prints its requests per
# second and the CPU time Traefik spent per request in microseconds. The
# CPU time is the steadier figure on a shared machine: other processes
# change the throughput far more than what each request costs Traefik.
CLK_TCK=$(getconf CLK_TCK)
traefik_ticks() { awk '{print $14 + $15}' "/proc/$WT_TRAEFIK_PID/stat"; }
measure() {
	local before after out
	before=$(traefik_ticks)
	out=$(wrk -t2 -c"$CONNS" -d"$2s" "http://127.0.0.1:$WEB/$1")
	after=$(traefik_ticks)
	awk -v b="$before" -v a="$after" -v hz="$CLK_TCK" '
		/requests in/ {n = $1}
		/Non-2xx or 3xx responses:/ {non2xx = $NF}
		/^Requests\/sec:/ {rps = $2}
		END {printf "%.0f %.1f %d\n", rps, (a - b) / hz * 1e6 / n, non2xx}' <<<"$out"
}

declare -A rps cpu
for ((round = 1; round <= ROUNDS; round++)); do
	for path in plain builtin plugin deny trivial; do
		measure "$path" 2 >/dev/null # warm-up
		read -r r c non2xx < <(measure "$path" "$SECONDS_EACH")
		echo "round $round /$path: $r req/s, $c µs of Traefik CPU per request, $non2xx responses not 2xx" >&2
		if [[ $path != deny && $non2xx != 0 ]]; then
			wl_die "/$path answered $non2xx requests with an error: the comparison would be unfair"
		fi
		if [[ -z ${rps[$path]:-} ]] || ((r > rps[$path])); then
			rps[$path]=$r
		fi
		if [[ -z ${cpu[$path]:-} ]] || awk -v a="$c" -v b="${cpu[$path]}" 'BEGIN {exit !(a < b)}'; then
			cpu[$path]=$c
		fi
	done
done

echo
echo "Traefik $WT_VERSION, wrk -t2 -c$CONNS, ${SECONDS_EACH}s per run, best of $ROUNDS, $(nproc) cores, loopback"
echo "(CPU ratios: the other router's CPU per request divided by this one's; above 1 is cheaper)"
printf '%-34s %9s %9s %11s %12s %9s %11s\n' "router" "req/s" "vs plain" "vs built-in" "CPU µs/req" "vs plain" "vs built-in"
row() {
	awk -v n="$1" -v r="${rps[$2]}" -v c="${cpu[$2]}" -v p="${rps[plain]}" -v b="${rps[builtin]}" \
		-v cp="${cpu[plain]}" -v cb="${cpu[builtin]}" \
		'BEGIN {printf "%-34s %9.0f %8.2fx %10.2fx %12.1f %8.2fx %10.2fx\n", n, r, r/p, r/b, c, cp/c, cb/c}'
}
row "plain router" plain
row "built-in rateLimit (huge limit)" builtin
row "windowlimit, all allowed" plugin
row "windowlimit, denial-heavy (429)" deny
row "trivial yaegi plugin (reference)" trivial
