#!/usr/bin/env bash
# The key-flood benchmark: does a limiter keep limiting a client
# while an attacker floods it with fresh keys? On loopback, for each host:
#
#   caddy     real Caddy built by ./xcaddy.sh with this checkout's module:
#             zone key {header.X-K}, limit 5, window 1m, max_keys 100
#             (40 in the saturating flood); Caddy answers "ok" itself
#   traefik   real Traefik v3.6.12 with this checkout's plugin: limit 5,
#             window 1m, maxKeys as Caddy's, sourceCriterion.ipStrategy.depth
#             1 (loopback a trusted proxy), in front of scripts/e2e/backend
#   builtin   the same Traefik's built-in rateLimit as the reference:
#             average 5, period 1m, burst 5, the same sourceCriterion (it
#             holds up to 65,536 keys, least recently used first out)
#
# and each flood kind:
#
#   fresh       every flood request carries a key never seen before
#   saturating  each flood key is pushed to its limit (5 requests) before
#               the next: its keys look exactly like the limited client's
#
# each run starts a fresh host process and:
#  1. puts one client at its limit: 5 requests answered 200, then a 429;
#  2. runs wrk (scripts/flood/flood.lua) for WL_FLOOD_SECONDS, every request
#     with a fresh X-K header and X-Forwarded-For address in 10.0.0.0/8 (a
#     counter, not a random number: no key repeats; the Lua script counts
#     the distinct keys it built and the run fails if any repeated);
#  3. meanwhile (scripts/flood/probe.go) the limited client knocks every
#     50 ms, and a new client arrives every 200 ms and spends its budget of
#     5 requests 300 ms apart;
#  4. reads the host's memory before the flood and after: the Go heap after
#     a forced GC (pprof heap?gc=1 on Caddy's admin endpoint and on
#     Traefik's api.debug), and the process's VmRSS.
#
# It prints one summary line per host and flood kind, such as this one
# (3a402c6, the code the flood was first reported on, on a busy 2-core machine):
#
#   caddy fresh: slipped 146/146, new clients 100% of budget (155/155), flood 121741 keys (1217x max_keys 100) 15192 req/s 49 µs CPU/req, heap 3.5 -> 3.8 MiB, RSS 51 -> 55 MiB
#
# "slipped" counts the limited client's requests answered 200 during the
# flood, out of those it sent: with a limit that holds it is 0. The new
# clients' share is their 200s over their attempts. The flood's keys are
# those wrk built (the last few may still have been in flight when it
# stopped), its rate the responses it got per second, and CPU/req the
# host's CPU time (/proc) over the flood divided by all the requests it
# answered meanwhile (wrk's and the probe's). The machine may be
# shared: rates and counts of tries move with the load, so read the figures
# as ratios under load. The built-in's bucket refills one token every 12 s,
# so with WL_FLOOD_SECONDS above 10 it rightly admits the limited client
# again; ours counts a sliding minute and never does within a run.
#
#   scripts/bench-flood.sh                    all hosts, both kinds (about 1 minute)
#   WL_FLOOD_HOSTS=caddy scripts/bench-flood.sh
#   WL_FLOOD_ASSERT=1 scripts/bench-flood.sh  exit 1 if our limiter let the limited client through
#
#   WL_FLOOD_HOSTS     hosts to run, of "caddy traefik builtin" (default all three)
#   WL_FLOOD_KINDS     flood kinds, of "fresh saturating" (default both)
#   WL_FLOOD_SECONDS   length of each flood, 2 to 30 (default 8; well within
#                      the minute after which our limit admits the client again)
#   WL_FLOOD_MAX_KEYS  max_keys / maxKeys of our zones in the fresh flood (default 100)
#   WL_FLOOD_SATURATING_MAX_KEYS  the same in the saturating flood (default 40)
#   WL_FLOOD_THREADS   wrk threads (default 1: the host gets the other core)
#   WL_FLOOD_CONNS     wrk connections (default 32)
#   WL_FLOOD_ASSERT    1: exit 1 when caddy or traefik let the limited client through
#
# What counts is the flood's size in units of max_keys: the defaults are
# small so that every host sends at least 100 x max_keys fresh keys within
# the 8 s on 2 busy cores (the plugin in Traefik floods at about 3,000
# requests/s there, Caddy at about 20,000, and a saturating key takes 5
# requests), and still above the about 32 keys of the well-behaved clients.
# A line whose flood fell short says "[below 100x max_keys]".
# The configuration the flood was first reported with, max_keys 1000, is
# WL_FLOOD_MAX_KEYS=1000.
#
# Traefik v3.6.12 is built once into ${WINDOWLIMIT_CACHE:-$HOME/.cache/windowlimit}
# (6 to 15 minutes the first time, see lib/traefik.sh); wrk is installed if missing.
set -euo pipefail
source "$(dirname "$0")/lib/caddy.sh"
source "$(dirname "$0")/lib/traefik.sh"
trap wl_cleanup EXIT

HOSTS=${WL_FLOOD_HOSTS:-caddy traefik builtin}
KINDS=${WL_FLOOD_KINDS:-fresh saturating}
FLOOD_SECONDS=${WL_FLOOD_SECONDS:-8}
FRESH_MAX_KEYS=${WL_FLOOD_MAX_KEYS:-100}
SATURATING_MAX_KEYS=${WL_FLOOD_SATURATING_MAX_KEYS:-40}
THREADS=${WL_FLOOD_THREADS:-1}
CONNS=${WL_FLOOD_CONNS:-32}
LIMIT=5
FLOOD_LUA=$WL_ROOT/scripts/flood/flood.lua

for h in $HOSTS; do
	[[ $h == caddy || $h == traefik || $h == builtin ]] || wl_die "WL_FLOOD_HOSTS: unknown host '$h'"
done
for k in $KINDS; do
	[[ $k == fresh || $k == saturating ]] || wl_die "WL_FLOOD_KINDS: unknown flood kind '$k'"
done
[[ $FLOOD_SECONDS =~ ^[0-9]+$ ]] && ((FLOOD_SECONDS >= 2 && FLOOD_SECONDS <= 30)) ||
	wl_die "WL_FLOOD_SECONDS: '$FLOOD_SECONDS' is not a whole number of seconds in 2..30"

wl_need wrk:wrk curl:curl ss:iproute2
wt_setup # the work directory, with the plugin laid out for Traefik
export XDG_CONFIG_HOME=$WL_WORK/xdg-config XDG_DATA_HOME=$WL_WORK/xdg-data

PROBE=$WL_WORK/probe
go build -o "$PROBE" "$WL_ROOT/scripts/flood/probe.go"

# cpu_ticks PID prints the CPU time the process has used, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# stop PID stops one host process this script started.
stop() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	wl_forget "$1"
}

# memory PID PPROF_URL prints the Go heap in use after a forced GC and the
# VmRSS, both in bytes.
memory() {
	local heap rss
	heap=$(curl -s --max-time 10 "$2/debug/pprof/heap?gc=1&debug=1" | awk '/^# HeapAlloc = / {print $4}')
	rss=$(awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status")
	echo "${heap:-0} $rss"
}

# wait_key URL HEADER VALUE waits, at most 30 s, until a request with that
# header is answered 200 (Traefik compiles the plugin on first use), while
# the host HOST_PID runs.
wait_key() {
	local i
	for ((i = 0; i < 300; i++)); do
		[[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H "$2: $3" "$1") == 200 ]] && return 0
		kill -0 "$HOST_PID" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$WL_WORK"/*.log >&2
	wl_die "$1 never answered 200"
}

# start_caddy MAX_KEYS sets HOST_PID, URL, PPROF and PROBE_KIND for a fresh Caddy.
start_caddy() {
	local admin web
	read -r admin web < <(wc_free_ports 2 | paste -sd' ')
	cat >"$WL_WORK/Caddyfile" <<-EOF
		{
			admin 127.0.0.1:$admin
			persist_config off
		}
		:$web {
			bind 127.0.0.1
			rate_limit {
				zone flood {
					key {header.X-K}
					window 1m
					limit $LIMIT
				}
				max_keys $1
			}
			respond "ok"
		}
	EOF
	wc_start "$WL_WORK/Caddyfile" "$admin"
	HOST_PID=${WL_PIDS[-1]}
	URL=http://127.0.0.1:$web/
	PPROF=http://127.0.0.1:$admin
	PROBE_KIND=header
	wait_key "$URL" X-K warm-up
}

# start_traefik LIMITER MAX_KEYS sets HOST_PID, URL, PPROF and PROBE_KIND for a fresh
# Traefik whose one router goes through that middleware (plugin or
# builtin). As wt_start_traefik, plus api.debug for the heap profile, and
# loopback as a trusted proxy: otherwise Traefik drops the flood's
# X-Forwarded-For before any middleware sees it.
start_traefik() {
	local web api mw
	read -r web api < <(wt_free_ports 2 | paste -sd' ')
	if [[ $1 == plugin ]]; then
		mw=$(wt_plugin limit "window: 1m" "limit: $LIMIT" "maxKeys: $2" "sourceCriterion: {ipStrategy: {depth: 1}}")
	else
		mw=$(printf '    limit:\n      rateLimit:\n        average: %d\n        period: 1m\n        burst: %d\n        sourceCriterion: {ipStrategy: {depth: 1}}\n' "$LIMIT" "$LIMIT")
	fi
	wt_dynamic "$WL_WORK/dynamic.yml" "$(wt_router flood / limit)" "$mw"
	cat >"$WL_WORK/traefik.yml" <<-YAML
		global:
		  checkNewVersion: false
		  sendAnonymousUsage: false
		log:
		  level: ERROR
		entryPoints:
		  web:
		    address: "127.0.0.1:$web"
		    forwardedHeaders:
		      trustedIPs: ["127.0.0.1/32"]
		  traefik:
		    address: "127.0.0.1:$api"
		api:
		  insecure: true
		  dashboard: false
		  debug: true
		providers:
		  file:
		    filename: $WL_WORK/dynamic.yml
		experimental:
		  localPlugins:
		    windowlimit:
		      moduleName: $WT_MODULE
	YAML
	(cd "$WL_WORK" && exec "$TRAEFIK" --configFile="$WL_WORK/traefik.yml" >"$WL_WORK/traefik.log" 2>&1) &
	HOST_PID=$!
	WL_PIDS+=("$HOST_PID")
	URL=http://127.0.0.1:$web/
	PPROF=http://127.0.0.1:$api
	PROBE_KIND=xff
	wait_key "$URL" X-Forwarded-For 192.0.2.250
}

# flood HOST KIND runs one flood against a fresh host and appends its
# summary line to SUMMARY.
SUMMARY=()
FAILED=()
flood() {
	local host=$1 kind=$2 per=1 max_keys=$FRESH_MAX_KEYS nonce out heap0 rss0 heap1 rss1 wrk_pid knock probe_out line cpu0 cpu1
	if [[ $kind == saturating ]]; then
		per=$LIMIT
		max_keys=$SATURATING_MAX_KEYS
	fi
	case $host in
	caddy) start_caddy "$max_keys" ;;
	traefik) start_traefik plugin "$max_keys" ;;
	builtin) start_traefik builtin "$max_keys" ;;
	esac
	nonce=$((RANDOM * 32768 + RANDOM))
	out=$WL_WORK/wrk-$host-$kind.txt

	read -r heap0 rss0 < <(memory "$HOST_PID" "$PPROF")
	"$PROBE" -url "$URL" -kind "$PROBE_KIND" -nonce "$nonce" -limit "$LIMIT" -prime
	WL_FLOOD_NONCE=$nonce wrk -t"$THREADS" -c"$CONNS" -d"${FLOOD_SECONDS}s" --timeout 5s \
		-s "$FLOOD_LUA" "$URL" -- "$per" "$THREADS" >"$out" 2>&1 &
	wrk_pid=$!
	WL_PIDS+=("$wrk_pid")
	cpu0=$(cpu_ticks "$HOST_PID")
	sleep 0.3 # wrk connects and the flood is under way
	knock=$(awk -v s="$FLOOD_SECONDS" 'BEGIN {printf "%dms", s * 1000 - 700}')
	probe_out=$("$PROBE" -url "$URL" -kind "$PROBE_KIND" -nonce "$nonce" -limit "$LIMIT" -knock -for "$knock")
	wait "$wrk_pid" || { cat "$out" >&2; wl_die "$host $kind: wrk failed"; }
	wl_forget "$wrk_pid"
	cpu1=$(cpu_ticks "$HOST_PID")
	read -r heap1 rss1 < <(memory "$HOST_PID" "$PPROF")
	stop "$HOST_PID"

	line=$(awk -v host="$host" -v kind="$kind" -v probe="$probe_out" -v max="$max_keys" \
		-v heap0="$heap0" -v rss0="$rss0" -v heap1="$heap1" -v rss1="$rss1" \
		-v ticks=$((cpu1 - cpu0)) -v hz="$(getconf CLK_TCK)" '
		/^flood: built/ { keys = $5; dk = $7; da = $10 }
		/^Requests\/sec:/ { rps = $2 }
		/ requests in / { done_ = $1 }
		/Non-2xx or 3xx responses:/ { non2xx = $5 }
		/Socket errors:/ { errors = $0; sub(/^ */, "", errors) }
		END {
			if (keys == "" || rps == "") { print "ERROR wrk printed no flood summary"; exit }
			distinct = (host == "caddy") ? dk : da
			if (distinct != keys) { printf "ERROR %d keys but %d distinct\n", keys, distinct; exit }
			if (probe ~ /(^| )(other|new_other) [1-9]/) { printf "ERROR the probes got answers other than 200 and 429: %s\n", probe; exit }
			n = split(probe, p, " ")
			for (i = 1; i < n; i += 2) v[p[i]] = p[i + 1]
			mib = 1048576
			printf "%s %s: slipped %d/%d, new clients %.0f%% of budget (%d/%d), flood %d keys%s %.0f req/s %.0f µs CPU/req, heap %.1f -> %.1f MiB, RSS %.0f -> %.0f MiB",
				host, kind, v["slipped"], v["tried"],
				v["new_tried"] ? 100 * v["new_ok"] / v["new_tried"] : 0, v["new_ok"], v["new_tried"],
				keys, host == "builtin" ? "" : sprintf(" (%.0fx max_keys %d)", keys / max, max), rps,
				ticks / hz * 1e6 / (done_ + v["tried"] + v["new_tried"]), heap0 / mib, heap1 / mib, rss0 / mib, rss1 / mib
			if (v["other"] + v["new_other"]) printf ", %d errors", v["other"] + v["new_other"]
			if (non2xx) printf ", flood denied %d", non2xx
			if (errors) printf " (wrk: %s)", errors
			if (host != "builtin" && keys < 100 * max) printf " [below 100x max_keys]"
			printf "\n"
		}' "$out")
	[[ $line == ERROR* ]] && { cat "$out" >&2; wl_die "$host $kind: ${line#ERROR }"; }
	wl_log "$line"
	SUMMARY+=("$line")
	if [[ $host != builtin && $probe_out != "slipped 0 "* ]]; then
		FAILED+=("$host $kind")
	fi
}

if [[ " $HOSTS " == *" caddy "* ]]; then
	wc_build
fi
if [[ " $HOSTS " == *" traefik "* || " $HOSTS " == *" builtin "* ]]; then
	TRAEFIK=$(wt_traefik)
	wt_start_backend
fi

for host in $HOSTS; do
	for kind in $KINDS; do
		wl_log "== $host, $kind flood, ${FLOOD_SECONDS}s"
		flood "$host" "$kind"
	done
done

echo
echo "key flood, limit $LIMIT per minute, max_keys $FRESH_MAX_KEYS (fresh) and $SATURATING_MAX_KEYS (saturating), ${FLOOD_SECONDS}s per flood, wrk -t$THREADS -c$CONNS, $(nproc) cores, loopback"
printf '%s\n' "${SUMMARY[@]}"
if [[ ${WL_FLOOD_ASSERT:-} == 1 ]] && ((${#FAILED[@]})); then
	wl_die "the limited client got through on: ${FAILED[*]}"
fi
