#!/usr/bin/env bash
# Throughput of the rate_limit handler in a real Caddy (built by ./xcaddy.sh)
# on loopback, from one run of one Caddy process with four sites:
#
#   plain      respond "ok"
#   allowed    rate_limit with a limit no run reaches, then respond "ok"
#   bare       the same with `headers none`: what the three rate-limit
#              headers on every response cost
#   denied     rate_limit with 1 request per minute per client IP: every
#              request but the first gets a 429 (empty body)
#
# After a warm-up of each site, each round runs wrk against the four sites
# in turn. It prints, as medians over the rounds: requests per second and
# their ratio to plain in the same round, and Caddy's CPU time per request
# (from /proc) and plain's divided by it. On a machine shared with other
# work the rates swing with the neighbours' load; CPU per request barely
# does, so the efficiency column is the steadier measure of the handler's
# cost.
#
#   WC_BENCH_SECONDS   length of each measured run (default 3)
#   WC_BENCH_WARMUP    length of the warm-up run of each site (default 2)
#   WC_BENCH_ROUNDS    rounds (default 7)
#   WC_BENCH_CONNS     wrk connections (default 32)
#   WC_BENCH_THREADS   wrk threads (default 1: Caddy gets the other core)
#   WC_BENCH_PROFILE   length of the CPU profile of each rate_limit site (default 5)
#
# Last, it takes a CPU profile of Caddy (admin /debug/pprof) while wrk
# drives each rate_limit site, and prints the share of Caddy's CPU spent in
# the handler itself (the handler's cumulative time minus the next
# handler's). Unlike the rates, that share hardly moves with the machine's
# other load.
set -euo pipefail
source "$(dirname "$0")/caddy-lib.sh"
trap wl_cleanup EXIT

SECONDS_EACH=${WC_BENCH_SECONDS:-3}
WARMUP=${WC_BENCH_WARMUP:-2}
ROUNDS=${WC_BENCH_ROUNDS:-7}
CONNS=${WC_BENCH_CONNS:-32}
THREADS=${WC_BENCH_THREADS:-1}
PROFILE=${WC_BENCH_PROFILE:-5}

wl_need wrk:wrk curl:curl ss:iproute2
wc_setup
read -r ADMIN PLAIN ALLOWED BARE DENIED < <(wc_free_ports 5 | paste -sd' ')

cat >"$WL_WORK/Caddyfile" <<EOF
{
	admin 127.0.0.1:$ADMIN
	persist_config off
}
:$PLAIN {
	bind 127.0.0.1
	respond "ok"
}
:$ALLOWED {
	bind 127.0.0.1
	rate_limit {
		zone bench_allowed {
			window 1m
			limit 1000000000
		}
	}
	respond "ok"
}
:$BARE {
	bind 127.0.0.1
	rate_limit {
		zone bench_bare {
			window 1m
			limit 1000000000
		}
		headers none
	}
	respond "ok"
}
:$DENIED {
	bind 127.0.0.1
	rate_limit {
		zone bench_denied {
			window 1m
			limit 1
		}
	}
	respond "ok"
}
EOF
wc_start "$WL_WORK/Caddyfile" "$ADMIN"

CADDY_PID=${WL_PIDS[-1]}
TICKS=$(getconf CLK_TCK)

# cpu_ticks prints the CPU time Caddy has used, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$CADDY_PID/stat"; }

# run PORT SECONDS runs wrk and prints "requests/s  CPU-µs-per-request" of
# Caddy; it fails when the site answered otherwise than expected.
run() {
	local port=$1 secs=$2 out rps reqs non2xx t0 t1
	t0=$(cpu_ticks)
	out=$(wrk -t"$THREADS" -c"$CONNS" -d"${secs}s" --timeout 5s "http://127.0.0.1:$port/")
	t1=$(cpu_ticks)
	rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
	reqs=$(awk '/requests in/ {print $1}' <<<"$out")
	non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
	[[ -n $rps && -n $reqs ]] || wl_die "wrk printed no rate: $out"
	if [[ $port == "$DENIED" ]]; then
		[[ -n $non2xx ]] || wl_die "the denial-heavy site answered no 429"
	else
		[[ -z $non2xx ]] || wl_die "port $port answered $non2xx non-2xx responses"
	fi
	awk -v rps="$rps" -v reqs="$reqs" -v ticks=$((t1 - t0)) -v hz="$TICKS" \
		'BEGIN {printf "%.0f %.2f\n", rps, ticks / hz * 1e6 / reqs}'
}

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

port_of() {
	case $1 in
	plain) echo "$PLAIN" ;;
	allowed) echo "$ALLOWED" ;;
	bare) echo "$BARE" ;;
	denied) echo "$DENIED" ;;
	esac
}

sites=(plain allowed bare denied)
for site in "${sites[@]}"; do run "$(port_of "$site")" "$WARMUP" >/dev/null; done

# Per round: each site's rate and CPU per request, and their ratios to
# plain's in the same round (neighbouring runs share the machine's noise).
declare -A rps=() cpu=() rps_ratio=() cpu_ratio=()
for round in $(seq "$ROUNDS"); do
	declare -A r=() c=()
	for site in "${sites[@]}"; do
		read -r r[$site] c[$site] < <(run "$(port_of "$site")" "$SECONDS_EACH")
		rps[$site]+="${r[$site]} "
		cpu[$site]+="${c[$site]} "
		wl_log "round $round: $site ${r[$site]} req/s, ${c[$site]} µs of Caddy CPU per request"
	done
	for site in "${sites[@]}"; do
		rps_ratio[$site]+="$(awk -v a="${r[$site]}" -v b="${r[plain]}" 'BEGIN {print a / b}') "
		cpu_ratio[$site]+="$(awk -v a="${c[$site]}" -v b="${c[plain]}" 'BEGIN {print b / a}') "
	done
done

med() { tr ' ' '\n' <<<"$1" | grep . | median; }
printf '\nCaddy %s, wrk -t%s -c%s, loopback; medians of %s rounds of %ss per site\n' \
	"$("$WC_CADDY" version | awk '{print $1}')" "$THREADS" "$CONNS" "$ROUNDS" "$SECONDS_EACH"
printf '%-32s %9s %10s %13s %12s\n' "site" "req/s" "req/s" "Caddy CPU" "efficiency"
printf '%-32s %9s %10s %13s %12s\n' "" "" "vs plain" "µs/request" "vs plain"
for site in "${sites[@]}"; do
	case $site in
	plain) label="plain Caddy" ;;
	allowed) label="rate_limit, all allowed" ;;
	bare) label="  the same, headers none" ;;
	denied) label="rate_limit, denial-heavy (429)" ;;
	esac
	printf '%-32s %9.0f %10.3f %13.2f %12.3f\n' "$label" "$(med "${rps[$site]}")" "$(med "${rps_ratio[$site]}")" \
		"$(med "${cpu[$site]}")" "$(med "${cpu_ratio[$site]}")"
done

# share PORT prints the percentage of Caddy's CPU spent in the rate_limit
# handler itself while wrk drives PORT.
share() {
	local port=$1 prof=$WL_WORK/cpu-$1.prof wrk_pid
	wrk -t"$THREADS" -c"$CONNS" -d"$((PROFILE + 2))s" --timeout 5s "http://127.0.0.1:$port/" >/dev/null &
	wrk_pid=$!
	sleep 1
	curl -s --max-time $((PROFILE + 30)) -o "$prof" "http://127.0.0.1:$ADMIN/debug/pprof/profile?seconds=$PROFILE"
	wait "$wrk_pid"
	go tool pprof -top -cum -unit=ms -nodecount=100000 "$WC_CADDY" "$prof" 2>/dev/null | awk '
		/Total samples/ { for (i = 1; i < NF; i++) if ($i == "=") total = $(i + 1) }
		/caddymodule\.\(\*Handler\)\.ServeHTTP$/ { handler = $4 }
		/caddyhttp\.StaticResponse\.ServeHTTP$/ { next_ = $4 }
		END {
			sub(/ms/, "", total); sub(/ms/, "", handler); sub(/ms/, "", next_)
			if (total > 0) printf "%.1f%%\n", (handler - next_) / total * 100; else print "n/a"
		}'
}

printf '\nShare of Caddy CPU in the rate_limit handler itself (pprof, %ss under wrk):\n' "$PROFILE"
for site in allowed bare denied; do
	case $site in
	allowed) label="rate_limit, all allowed" ;;
	bare) label="  the same, headers none" ;;
	denied) label="rate_limit, denial-heavy (429)" ;;
	esac
	printf '%-32s %9s\n' "$label" "$(share "$(port_of "$site")")"
done
