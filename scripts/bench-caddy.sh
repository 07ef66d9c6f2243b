#!/usr/bin/env bash
# Throughput of the rate_limit handler in a real Caddy (built by ./xcaddy.sh)
# on loopback, from one run of one Caddy process with these sites:
#
#   plain      respond "ok"
#   allowed    rate_limit with a limit no run reaches, then respond "ok"
#   bare       the same with `headers none`: what the three rate-limit
#              headers on every response cost
#   denied     rate_limit with 1 request per minute per client IP: every
#              request but the first gets a 429 (empty body)
#   keyed      plain again, driven by the wrk script that sends a random
#              X-Key of 1000 per request: the base of the Redis site, with
#              wrk doing the same work
#   redis      rate_limit keyed by X-Key with `store redis`, on a throwaway
#              redis-server this script starts on loopback: 1000 busy keys,
#              a window of 1s in sub-windows of 100ms, every sub-window
#              written, a limit no run reaches
#   inflight   allowed's zone with `in_flight 1000` beside its rate: a slot
#              per request (wrk's connections never fill them), compared
#              with allowed
#   redisflight the redis site's zone with `in_flight 1000`: a slot per
#              request in Redis (a take and a release), compared with redis
#
# After a warm-up of each site, each round runs wrk against the sites in
# turn. It prints, as medians over the rounds: requests per second and
# their ratio to the base's in the same round (plain's; keyed's for the
# Redis site), and Caddy's CPU time per request (from /proc) and the
# base's divided by it; for the Redis site, redis-server's CPU time per
# request too, and from its INFO the script's cost per call and how many
# calls it read per read system call (the depth of the pipelines). On a machine shared with other work the rates swing with
# the neighbours' load; CPU per request barely does, so the efficiency
# column is the steadier measure of the handler's cost.
#
#   WC_BENCH_SITES     the sites besides plain, of the above (default
#                      "allowed bare denied keyed redis"; redis brings keyed,
#                      inflight allowed, redisflight redis; inflight and
#                      redisflight run only when named)
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
# handler's; for the Redis site that includes the Redis client). Unlike the
# rates, that share hardly moves with the machine's other load. With
# WL_KEEP_WORK set the profiles stay in the work directory.
set -euo pipefail
source "$(dirname "$0")/lib/caddy.sh"
trap wl_cleanup EXIT

SECONDS_EACH=${WC_BENCH_SECONDS:-3}
WARMUP=${WC_BENCH_WARMUP:-2}
ROUNDS=${WC_BENCH_ROUNDS:-7}
CONNS=${WC_BENCH_CONNS:-32}
THREADS=${WC_BENCH_THREADS:-1}
PROFILE=${WC_BENCH_PROFILE:-5}

sites=(plain)
for site in ${WC_BENCH_SITES:-allowed bare denied keyed redis}; do
	case $site in
	plain) ;;
	allowed | bare | denied | keyed | redis | inflight | redisflight) ;;
	*) wl_die "WC_BENCH_SITES: unknown site $site" ;;
	esac
	[[ $site != inflight || " ${sites[*]} " == *" allowed "* ]] || sites+=(allowed)
	[[ $site != redisflight || " ${sites[*]} " == *" redis "* ]] || sites+=(redis)
	[[ $site != redis* || " ${sites[*]} " == *" keyed "* ]] || sites+=(keyed)
	[[ " ${sites[*]} " == *" $site "* ]] || sites+=("$site")
done
has() { [[ " ${sites[*]} " == *" $1 "* ]]; }

wl_need wrk:wrk curl:curl ss:iproute2 redis-server:redis-server redis-cli:redis-tools
wc_setup
read -r ADMIN PLAIN ALLOWED BARE DENIED KEYED REDIS_SITE REDIS_PORT INFLIGHT REDISFLIGHT < <(wc_free_ports 10 | paste -sd' ')

# The wrk script of the keyed and redis sites: a random X-Key of 1000 per
# request.
cat >"$WL_WORK/keys.lua" <<'EOF'
math.randomseed(os.time())
request = function()
	return wrk.format(nil, nil, { ["X-Key"] = tostring(math.random(1000)) })
end
EOF

REDIS_PID=
if has redis; then
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WL_WORK" \
		>>"$WL_WORK/redis.log" 2>&1 &
	REDIS_PID=$!
	WL_PIDS+=("$REDIS_PID")
	for i in $(seq 100); do
		[[ $(redis-cli -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]] && break
		((i < 100)) || wl_die "redis-server did not start"
		sleep 0.05
	done
fi

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
:$KEYED {
	bind 127.0.0.1
	respond "ok"
}
:$INFLIGHT {
	bind 127.0.0.1
	rate_limit {
		zone bench_inflight {
			window 1m
			limit 1000000000
			in_flight 1000
		}
	}
	respond "ok"
}
EOF
if has redis; then
	cat >>"$WL_WORK/Caddyfile" <<EOF
:$REDIS_SITE {
	bind 127.0.0.1
	rate_limit {
		zone bench_redis {
			key {header.X-Key}
			window 1s
			sub_window 100ms
			limit 1000000000
		}
		store redis {
			address 127.0.0.1:$REDIS_PORT
		}
		# A failing store denies (429), which run() stops on: no figure
		# of a failure.
		on_store_error deny
	}
	respond "ok"
}
:$REDISFLIGHT {
	bind 127.0.0.1
	rate_limit {
		zone bench_redisflight {
			key {header.X-Key}
			window 1s
			sub_window 100ms
			limit 1000000000
			in_flight 1000
		}
		store redis {
			address 127.0.0.1:$REDIS_PORT
		}
		on_store_error deny
	}
	respond "ok"
}
EOF
fi
wc_start "$WL_WORK/Caddyfile" "$ADMIN"

CADDY_PID=${WL_PIDS[-1]}
TICKS=$(getconf CLK_TCK)

# cpu_ticks PID prints the CPU time the process has used, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

port_of() {
	case $1 in
	plain) echo "$PLAIN" ;;
	allowed) echo "$ALLOWED" ;;
	bare) echo "$BARE" ;;
	denied) echo "$DENIED" ;;
	keyed) echo "$KEYED" ;;
	redis) echo "$REDIS_SITE" ;;
	inflight) echo "$INFLIGHT" ;;
	redisflight) echo "$REDISFLIGHT" ;;
	esac
}

# wrk_args SITE prints wrk's arguments that drive SITE.
wrk_args() {
	case $1 in
	keyed | redis | redisflight) echo "-s $WL_WORK/keys.lua http://127.0.0.1:$(port_of "$1")/" ;;
	*) echo "http://127.0.0.1:$(port_of "$1")/" ;;
	esac
}

# base SITE names the site SITE is compared with: the one driven alike.
base() {
	case $1 in
	redis) echo keyed ;;
	inflight) echo allowed ;;
	redisflight) echo redis ;;
	*) echo plain ;;
	esac
}

# run SITE SECONDS runs wrk and prints "requests/s  CPU-µs-per-request" of
# Caddy and of redis-server (0 but for the Redis site); it fails when the
# site answered otherwise than expected.
run() {
	local site=$1 secs=$2 out rps reqs non2xx t0 t1 r0=0 r1=0
	t0=$(cpu_ticks "$CADDY_PID")
	[[ $site != redis* ]] || r0=$(cpu_ticks "$REDIS_PID")
	# shellcheck disable=SC2046 # wrk_args prints separate words
	out=$(wrk -t"$THREADS" -c"$CONNS" -d"${secs}s" --timeout 5s $(wrk_args "$site"))
	t1=$(cpu_ticks "$CADDY_PID")
	[[ $site != redis* ]] || r1=$(cpu_ticks "$REDIS_PID")
	rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
	reqs=$(awk '/requests in/ {print $1}' <<<"$out")
	non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
	[[ -n $rps && -n $reqs ]] || wl_die "wrk printed no rate: $out"
	if [[ $site == denied ]]; then
		[[ -n $non2xx ]] || wl_die "the denial-heavy site answered no 429"
	else
		[[ -z $non2xx ]] || wl_die "site $site answered $non2xx non-2xx responses"
	fi
	awk -v rps="$rps" -v reqs="$reqs" -v ticks=$((t1 - t0)) -v rticks=$((r1 - r0)) -v hz="$TICKS" \
		'BEGIN {printf "%.0f %.2f %.2f\n", rps, ticks / hz * 1e6 / reqs, rticks / hz * 1e6 / reqs}'
}

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# The warm-up of the Redis site also writes every sub-window of its keys.
for site in "${sites[@]}"; do run "$site" "$WARMUP" >/dev/null; done
! has redis || redis-cli -p "$REDIS_PORT" config resetstat >/dev/null

# Per round: each site's rate and CPU per request, and their ratios to
# its base's in the same round (neighbouring runs share the machine's
# noise).
declare -A rps=() cpu=() rcpu=() rps_ratio=() cpu_ratio=()
for round in $(seq "$ROUNDS"); do
	declare -A r=() c=() rc=()
	for site in "${sites[@]}"; do
		read -r r[$site] c[$site] rc[$site] < <(run "$site" "$SECONDS_EACH")
		rps[$site]+="${r[$site]} "
		cpu[$site]+="${c[$site]} "
		rcpu[$site]+="${rc[$site]} "
		wl_log "round $round: $site ${r[$site]} req/s, ${c[$site]} µs of Caddy CPU per request"
		# The keys live a window (1 s) past their last request: count
		# them as the run ends, not after the table.
		[[ $site != redis ]] || keys=$(redis-cli -p "$REDIS_PORT" dbsize)
	done
	for site in "${sites[@]}"; do
		b=$(base "$site")
		rps_ratio[$site]+="$(awk -v a="${r[$site]}" -v b="${r[$b]}" 'BEGIN {print a / b}') "
		cpu_ratio[$site]+="$(awk -v a="${c[$site]}" -v b="${c[$b]}" 'BEGIN {print b / a}') "
	done
done

med() { tr ' ' '\n' <<<"$1" | grep . | median; }
# No request may have been decided by on_store_error: a store that failed
# is no measure of the Redis site.
if has redis; then
	fallbacks=$(curl -s "http://127.0.0.1:$ADMIN/metrics" | awk '/^caddy_http_rate_limit_store_fallbacks_total/ {s += $NF} END {print s + 0}')
	[[ $fallbacks == 0 ]] || wl_die "the Redis site decided $fallbacks requests by on_store_error: the store failed"
fi
printf '\nCaddy %s, wrk -t%s -c%s, loopback; medians of %s rounds of %ss per site\n' \
	"$("$WC_CADDY" version | awk '{print $1}')" "$THREADS" "$CONNS" "$ROUNDS" "$SECONDS_EACH"
printf '%-34s %9s %10s %13s %12s\n' "site" "req/s" "req/s" "Caddy CPU" "efficiency"
printf '%-34s %9s %10s %13s %12s\n' "" "" "vs base" "µs/request" "vs base"
for site in "${sites[@]}"; do
	case $site in
	plain) label="plain Caddy (base)" ;;
	allowed) label="rate_limit, all allowed" ;;
	bare) label="  the same, headers none" ;;
	denied) label="rate_limit, denial-heavy (429)" ;;
	keyed) label="plain Caddy, random X-Key (base)" ;;
	redis) label="rate_limit, store redis, X-Key" ;;
	inflight) label="  allowed + in_flight (vs allowed)" ;;
	redisflight) label="  redis + in_flight (vs redis)" ;;
	esac
	printf '%-34s %9.0f %10.3f %13.2f %12.3f\n' "$label" "$(med "${rps[$site]}")" "$(med "${rps_ratio[$site]}")" \
		"$(med "${cpu[$site]}")" "$(med "${cpu_ratio[$site]}")"
done
if has redis; then
	printf '%-34s %9s %10s %13.2f\n' "  redis-server CPU µs/request" "" "" "$(med "${rcpu[redis]}")"
	! has redisflight ||
		printf '%-34s %9s %10s %13.2f\n' "  the same, redis + in_flight" "" "" "$(med "${rcpu[redisflight]}")"
	# What the script costs Redis per call, and how many calls Redis
	# read per read system call (the pipelines' depth), over the rounds.
	stat() { redis-cli -p "$REDIS_PORT" info "$1" | tr -d '\r' | sed -n "s/^$2//p"; }
	evalsha=$(stat commandstats 'cmdstat_evalsha:')
	calls=$(grep -o 'calls=[0-9]*' <<<"$evalsha" | cut -d= -f2)
	printf '  (%s keys in Redis, redis-server %s; EVALSHA %s µs per call, %s calls per read)\n' \
		"$keys" "$(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2)" \
		"$(grep -o 'usec_per_call=[0-9.]*' <<<"$evalsha" | cut -d= -f2)" \
		"$(awk -v c="$calls" -v r="$(stat stats 'total_reads_processed:')" 'BEGIN {printf "%.1f", c / r}')"
fi

# share SITE prints the percentage of Caddy's CPU spent in the rate_limit
# handler itself (with the Redis client, for the Redis site) while wrk
# drives SITE.
share() {
	local prof=$WL_WORK/cpu-$1.prof wrk_pid
	# shellcheck disable=SC2046 # wrk_args prints separate words
	wrk -t"$THREADS" -c"$CONNS" -d"$((PROFILE + 2))s" --timeout 5s $(wrk_args "$1") >/dev/null &
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
for site in allowed bare denied redis; do
	has "$site" || continue
	case $site in
	allowed) label="rate_limit, all allowed" ;;
	bare) label="  the same, headers none" ;;
	denied) label="rate_limit, denial-heavy (429)" ;;
	redis) label="rate_limit, store redis, X-Key" ;;
	esac
	printf '%-34s %9s\n' "$label" "$(share "$site")"
done
