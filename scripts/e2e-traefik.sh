#!/usr/bin/env bash
# End-to-end test of the Traefik plugin in a real Traefik v3.6.12 (built from
# the Go module proxy's source and cached under $WINDOWLIMIT_CACHE): local
# plugin, file provider, a loopback backend. Limit 20 per minute: 22
# requests give 20 x 200 then 429 with Retry-After and the rate-limit
# headers, across a reload of the dynamic configuration made midway.
# Then the Redis part: two Traefik instances on one throwaway redis-server
# share one limit of 20 per minute: 11 requests to each, alternating, give
# exactly 20 x 200 in total, then 429.
# countStatus, in memory and then shared by both instances through Redis:
# a middleware with limit 5 and countStatus ["401"] lets 200s through
# uncounted, counts the 401s, then answers 429 without reaching the
# backend (which answers the status the X-Status header names); a
# server-sent event stream through it streams (the first event arrives
# while the stream is open).
# Overrides, in memory and through Redis: a middleware keyed by X-API-Key
# with limit 2 and overrides ["gold-key=600", "10.0.0.0/8=unlimited"]
# gives gold-key 600 (one count across instances) and limits other keys
# to 2, the key 10.1.2.3 sent from 127.0.0.1 too (a CIDR matches the
# client's address, never the key); one with ["127.0.0.0/8=unlimited"]
# lets the test's client through without headers.
# Chaos, on the same two instances: the redis-server is killed (kill -9)
# while 300 requests, 8 at a time, each on its own key, run against one
# instance of a middleware with the default onStoreError (allow): every
# response is 200 (some counted in Redis, the rest answered by the policy),
# none is a 5xx, and a middleware with onStoreError deny answers 429 with
# Retry-After: 1 meanwhile. Redis is restarted on the same port: the two
# instances count one shared limit again within 1 s (the recovery time is
# printed), then give exactly 20 x 200 and 429 on a fresh key, whose count
# is in the new Redis.
# Cluster, on the same two instances: a router whose two middlewares (by
# client address, and by X-User) keep their counts in a throwaway
# three-master Redis Cluster (scripts/redis-cluster.sh): exactly 20 x 200
# across the instances, then 429, and both keys in the cluster.
# Operators' lines, on a third instance at DEBUG: a dry-run line names the
# key only with logKey, and a zone that evicts keys that still counted
# (maxKeys 2, five keys) says so in Traefik's log.
# countStatus under attack (scripts/attack-e2e.sh), on a fourth instance: a
# login on the backend, behind a service, with limit 5 per minute and
# countStatus ["401"], in memory and in a throwaway redis-server, on an
# entry point speaking h1 and h2c (Traefik's default without TLS). Each
# attack, from its own loopback address, leaves the proxy without a final
# status to count by: the connection reset after the status line and
# mid-body (the proxy panics with http.ErrAbortHandler), h2 streams reset
# after their HEADERS, a client that gives up before a tarpit's 401
# (Traefik's 499), 200 tries at once (200 connections; 200 streams of one
# connection). It proves that the backend got at most 5 attempts of each
# in the window: the check counts a request before it is passed on, and
# gives the count back only for a final status not listed. And 12 logins
# with the password then 7 wrong ones still give 12 x 200, 5 x 401, then
# 429.
# A source that finds nothing, on an instance of its own with no trusted
# proxy (Traefik drops the client's X-Forwarded-For): middlewares with
# ipStrategy depth 1 and depth 2, limit 3. Client A (127.0.0.1) gets 200
# 200 200 429, then client B (127.0.0.2) gets 200: each is counted by its
# remote address, not in one count for all. Each middleware says so once
# in Traefik's log.
#
# The quickstart (README.md, Quickstart: Traefik): scripts/traefik-quickstart.sh
# started on free loopback ports with a traefik on PATH whose version says
# "dev" (as one built from source does), which it must run; the README's
# curl lines run against it, each output compared with the "# ..." line
# under it; then the script is stopped (SIGTERM, as Ctrl-C) and must leave
# no process, port or directory behind. Started again with a traefik on
# PATH that says 2.11.0, it must run its own build of v3, saying why.
#
# Misspelled options, on an instance of their own: a misspelled option at
# each level (top, sourceCriterion, ipStrategy, redis), typed and with
# every value a string as labels give it, leaves its router answering 404
# and is named in Traefik's log; the same options in other cases limit
# each client apart.
# The logs, on four instances (format common and json, with and without
# log.filePath, at DEBUG and INFO): the plugin's lines are Traefik's own
# entries, at DEBUG (rejections) and ERROR (a source that finds nothing),
# in Traefik's format and file, and nowhere else.
# A reset is a reset (scripts/reset-e2e.sh), on two instances of their own
# sharing a throwaway redis-server, the key deleted in Redis directly (as
# when Redis loses it; Traefik has no admin API): a hot key (limit 3000 a
# minute) warmed up until the instances lease (fewer script calls than
# requests) is deleted; a burst of 12000 right after gets at most 3000
# plus a tenth (the leases' units cannot be read in Traefik; the excess is
# printed). countStatus ["401"] with limit 5 in front of the backend:
# five slow requests that end in 200 are in flight when the key is
# deleted, five 401s get the fresh budget, and once the slow ones end the
# next five 401s get 429 (their refunds give nothing back to the new
# count).
#
#
# Counts survive a restart (persist): a middleware of limit 5 a minute with
# persist { directory, interval: 1s }: 5 requests and a 429, two
# intervals, SIGKILL, a start: the next request is 429, its Retry-After
# no later than before, and earlier by no more than the time since then,
# and Traefik's log says what was restored. Garbage written over the
# snapshot: Traefik starts, the route serves 200, and the log says why.
#
# WL_PARTS=attack runs the attack part alone; WL_PARTS=fallback the
# fallback part, WL_PARTS=quickstart the quickstart part, WL_PARTS=options
# the misspelled options, WL_PARTS=logs the logs, WL_PARTS=reset the reset
# part, WL_PARTS=persist the persist part.
set -euo pipefail
source "$(dirname "$0")/traefik-lib.sh"
source "$(dirname "$0")/redis-e2e.sh"
source "$(dirname "$0")/attack-e2e.sh"
source "$(dirname "$0")/reset-e2e.sh"
trap 'wl_cluster_stop; wl_cleanup' EXIT

wl_need curl:curl redis-server:redis-server redis-cli:redis-tools
wt_setup
wt_start_backend
read -r WEB PING < <(wt_free_ports 2 | paste -sd' ')

# attack_part is the countStatus attack part, on an instance of its own
# whose routers send /mem/ (from 127.0.1.x) and /redis/ (from 127.0.2.x) to
# the backend through a middleware in memory and one in Redis.
attack_part() {
	local dir=$WL_WORK/attack redis web ping
	read -r redis web ping < <(wt_free_ports 3 | paste -sd' ')
	wl_redis_start "$redis"
	mkdir -p "$dir"
	cp -r "$WL_WORK/plugins-local" "$dir/"
	wt_dynamic "$dir/dynamic.yml" "$(
		wt_router ready /plain
		wt_router mem /mem/ mem-login
		wt_router redis /redis/ redis-login
	)" "$(
		wt_plugin mem-login "window: 1m" "limit: $WL_ATTACK_LIMIT" 'countStatus: ["401"]'
		wt_plugin redis-login "window: 1m" "limit: $WL_ATTACK_LIMIT" 'countStatus: ["401"]' \
			"redis: {endpoints: [\"127.0.0.1:$redis\"], keyPrefix: \"atk:\"}"
	)"
	wt_start_traefik "$web" "$ping" "$dir"
	wt_wait_status "http://127.0.0.1:$web/plain" 200 || wl_die "instance attack never loaded its routers"
	wl_attacks "traefik, memory" "http://127.0.0.1:$web/mem/login" 127.0.1
	wl_attacks "traefik, redis" "http://127.0.0.1:$web/redis/login" 127.0.2
	wl_attacks_done
	kill "$WT_TRAEFIK_PID"
}

# reset_instance NAME WEB PING REDIS starts an instance of the reset part
# in $WL_WORK/NAME: /big to a hot key's middleware (limit
# WL_RESET_LIMIT a minute), /cs/ to countStatus ["401"] with limit 5 in
# front of the backend, both keyed by the client's address in the
# redis-server on REDIS.
reset_instance() {
	local dir=$WL_WORK/$1 redis="redis: {endpoints: [\"127.0.0.1:$4\"], keyPrefix: \"rst:\"}"
	mkdir -p "$dir"
	cp -r "$WL_WORK/plugins-local" "$dir/"
	wt_dynamic "$dir/dynamic.yml" "$(
		wt_router ready /plain
		wt_router big /big big-limit
		wt_router cs /cs/ cs-limit
	)" "$(
		wt_plugin big-limit "window: 1m" "limit: $WL_RESET_LIMIT" "$redis"
		wt_plugin cs-limit "window: 1m" "limit: 5" 'countStatus: ["401"]' "$redis"
	)"
	wt_start_traefik "$2" "$3" "$dir"
	wt_wait_status "http://127.0.0.1:$2/plain" 200 || wl_die "instance $1 never loaded its routers"
}

# reset_del KEY deletes KEY in Redis, as when Redis loses it.
reset_del() {
	[[ $(redis-cli -p "$WL_REDIS_PORT" del "$1") == 1 ]] || wl_die "reset: redis-cli DEL $1: no such key"
}

# reset_held: Traefik shows no lease; the warm-up's script calls showed
# that leases were taken.
reset_held() {
	WL_RESET_HELD=
	WL_RESET_HELD_TEXT="leases unknown (Traefik shows none)"
}

# The resets of the reset part, without arguments or with the client's
# address.
reset_big_del() { reset_del 'rst:big-limit@file:{127.0.0.1}'; }
reset_cs_del() { reset_del "rst:cs-limit@file:{$1}"; }

# reset_part is the reset part.
reset_part() {
	local redis web_a ping_a web_b ping_b pids pid
	read -r redis web_a ping_a web_b ping_b < <(wt_free_ports 5 | paste -sd' ')
	wl_redis_start "$redis"
	reset_instance reset-a "$web_a" "$ping_a" "$redis"
	pids=("$WT_TRAEFIK_PID")
	reset_instance reset-b "$web_b" "$ping_b" "$redis"
	pids+=("$WT_TRAEFIK_PID" "$WL_REDIS_PID")
	wl_reset_leases "traefik, a hot key deleted in redis" tenth reset_held reset_big_del \
		"http://127.0.0.1:$web_a/big" "http://127.0.0.1:$web_b/big"
	wl_reset_count_status "traefik, redis, key deleted in redis" "http://127.0.0.1:$web_a/cs/x" 127.0.3.1 reset_cs_del
	wl_reset_count_status "traefik, redis, key deleted in redis, slow requests on instance a, the rest on b" \
		"http://127.0.0.1:$web_a/cs/x" 127.0.3.2 reset_cs_del "http://127.0.0.1:$web_b/cs/x"
	wl_resets_done
	for pid in "${pids[@]}"; do
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		wl_forget "$pid"
	done
}

# quickstart_start PATHDIR starts scripts/traefik-quickstart.sh on free
# loopback ports, with PATHDIR first on PATH, and waits until it is ready;
# it sets QS_PID, QS_PORT, QS_BPORT, QS_WORK (its work directory) and
# QS_LOG (its output).
quickstart_start() {
	local i
	read -r QS_PORT QS_BPORT < <(wt_free_ports 2 | paste -sd' ')
	QS_LOG=$1/out.log
	PATH=$1:$PATH WL_QUICKSTART_PORT=$QS_PORT WL_QUICKSTART_BACKEND_PORT=$QS_BPORT \
		"$WL_ROOT/scripts/traefik-quickstart.sh" >"$QS_LOG" 2>&1 &
	QS_PID=$!
	WL_PIDS+=("$QS_PID")
	for ((i = 0; i < 600; i++)); do
		grep -q 'traefik-quickstart: ready' "$QS_LOG" && break
		kill -0 "$QS_PID" 2>/dev/null || { cat "$QS_LOG" >&2; wl_die "quickstart: the script exited"; }
		sleep 0.1
	done
	grep -q 'traefik-quickstart: ready' "$QS_LOG" || { cat "$QS_LOG" >&2; wl_die "quickstart: not ready within 60 s"; }
	QS_WORK=$(sed -n 's/^traefik-quickstart: starting Traefik in \([^ ]*\) .*/\1/p' "$QS_LOG")
	[[ -d $QS_WORK/plugins-local ]] || wl_die "quickstart: no work directory with plugins-local in its output"
}

# quickstart_stop stops the script as Ctrl-C does and checks that it left
# no process, port or directory behind.
quickstart_stop() {
	local i
	# A background job ignores SIGINT: SIGTERM.
	kill -TERM "$QS_PID"
	for ((i = 0; i < 200; i++)); do
		kill -0 "$QS_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$QS_PID" 2>/dev/null && wl_die "quickstart: the script did not stop within 20 s of SIGTERM"
	wait "$QS_PID" 2>/dev/null || true
	wl_forget "$QS_PID"
	for i in "$QS_PORT" "$QS_BPORT"; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$i") 2>/dev/null; then
			wl_die "quickstart: 127.0.0.1:$i still answers after the script stopped"
		fi
	done
	[[ ! -e $QS_WORK ]] || wl_die "quickstart: the script left $QS_WORK behind"
	wl_pass "quickstart: stopped, leaving no process, port or work directory behind"
}

# fake_traefik FILE VERSION TRAEFIK writes a traefik whose `traefik
# version` says VERSION and which runs TRAEFIK for anything else.
fake_traefik() {
	printf '#!/usr/bin/env bash\nif [[ ${1:-} == version ]]; then printf "Version:      %s\\nCodename:     x\\n"; exit 0; fi\nexec %q "$@"\n' \
		"$2" "$3" >"$1"
	chmod +x "$1"
}

# quickstart_part runs scripts/traefik-quickstart.sh and README's lines
# with a traefik on PATH that says "Version: dev", as one built from source
# does (the one built here, behind a wrapper): the script must run it. Then
# with one that says 2.11.0: it must run its own build, saying why.
quickstart_part() {
	local dir=$WL_WORK/quickstart traefik line
	mkdir -p "$dir/dev" "$dir/v2"
	wl_readme_lines "Quickstart: Traefik" localhost:8081 >"$dir/lines"
	[[ -s $dir/lines ]] || wl_die "quickstart: no curl lines under README's Quickstart: Traefik"
	traefik=$(wt_traefik) # a build, if any, before the bounded wait
	fake_traefik "$dir/dev/traefik" dev "$traefik"
	fake_traefik "$dir/v2/traefik" 2.11.0 "$traefik"

	quickstart_start "$dir/dev"
	line=$(grep -m1 '^traefik-quickstart: using' "$QS_LOG") || true
	[[ $line == "traefik-quickstart: using $dir/dev/traefik (on PATH, Traefik built from source: its version says 'dev'"* ]] ||
		{ cat "$QS_LOG" >&2; wl_die "quickstart: a dev traefik on PATH: '$line'"; }
	wl_pass "quickstart: a traefik on PATH that says dev runs: $line"
	wl_readme_check "$dir/lines" localhost:8081 "127.0.0.1:$QS_PORT" "$QS_LOG"
	quickstart_stop

	quickstart_start "$dir/v2"
	line=$(grep -m1 '^traefik-quickstart: using' "$QS_LOG") || true
	[[ $line == "traefik-quickstart: using Traefik $WT_VERSION, built here earlier: $traefik ($dir/v2/traefik is Traefik 2.11.0, and the plugin needs v3)" ]] ||
		{ cat "$QS_LOG" >&2; wl_die "quickstart: a v2 traefik on PATH: '$line'"; }
	wl_pass "quickstart: a v2 traefik on PATH does not run: $line"
	quickstart_stop
}

# persist_part is the persist part, on an instance of its own, started
# three times on one snapshot directory.
persist_part() {
	local dir=$WL_WORK/persist web ping n got ra1 ra2 t0 took file
	read -r web ping < <(wt_free_ports 2 | paste -sd' ')
	mkdir -p "$dir"
	cp -r "$WL_WORK/plugins-local" "$dir/"
	wt_dynamic "$dir/dynamic.yml" "$(
		wt_router ready /plain
		wt_router login /login/ persist-limit
	)" "$(
		wt_plugin persist-limit "window: 1m" "limit: 5" "persist: {directory: \"$dir/snapshots\", interval: 1s}"
	)"
	wt_start_traefik "$web" "$ping" "$dir"
	wt_wait_status "http://127.0.0.1:$web/plain" 200 || wl_die "instance persist never loaded its routers"
	for n in 1 2 3 4 5; do
		got=$(wl_fetch "http://127.0.0.1:$web/login/")
		[[ $got == 200 ]] || wl_die "persist: request $n: $got, want 200"
	done
	got=$(wl_fetch "http://127.0.0.1:$web/login/")
	ra1=$(wl_header Retry-After)
	[[ $got == 429 && -n $ra1 ]] || wl_die "persist: 6th request: $got (Retry-After '$ra1'), want 429"
	t0=$(date +%s.%N)
	sleep 2.2 # two intervals
	kill -9 "$WT_TRAEFIK_PID"
	wait "$WT_TRAEFIK_PID" 2>/dev/null || true
	cp "$dir/traefik.log" "$dir/traefik-1.log"
	WL_TRAEFIK_LOG_LEVEL=DEBUG wt_start_traefik "$web" "$ping" "$dir"
	wt_wait_status "http://127.0.0.1:$web/plain" 200 || wl_die "instance persist never loaded its routers again"
	got=$(wl_fetch "http://127.0.0.1:$web/login/")
	ra2=$(wl_header Retry-After)
	took=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN {printf "%.1f", a - b}')
	[[ $got == 429 ]] || wl_die "persist: after SIGKILL two intervals after the 5th request: $got, want 429"
	(((ra1 - ra2) <= 1 + ${took%.*} && ra2 <= ra1)) ||
		wl_die "persist: Retry-After $ra2 after the restart, $ra1 before it, ${took}s earlier"
	grep -q 'windowlimit: info: middleware \"persist-limit@file\": restored 1 keys from' "$dir/traefik.log" ||
		wl_die "persist: Traefik's log says nothing restored: $(grep -i windowlimit "$dir/traefik.log" | head -5)"
	wl_pass "persist: 5 x 200, 429 (Retry-After $ra1), two intervals, SIGKILL, start: 429 (Retry-After $ra2, ${took}s after the first 429); logged"
	file=$(ls "$dir"/snapshots/*.wlsnap)
	[[ $(stat -c %a "$file") == 600 && $(stat -c %a "$dir/snapshots") == 700 ]] ||
		wl_die "persist: modes $(stat -c %a "$file") and $(stat -c %a "$dir/snapshots"), want 600 and 700"
	kill "$WT_TRAEFIK_PID"
	wait "$WT_TRAEFIK_PID" 2>/dev/null || true
	head -c 3000 /dev/urandom >"$file"
	cp "$dir/traefik.log" "$dir/traefik-2.log"
	wt_start_traefik "$web" "$ping" "$dir"
	wt_wait_status "http://127.0.0.1:$web/plain" 200 || wl_die "instance persist never loaded its routers a third time"
	got=$(wl_fetch "http://127.0.0.1:$web/login/")
	[[ $got == 200 ]] || wl_die "persist: after garbage over the snapshot: $got, want 200"
	grep -q 'persist-limit@file\": starts empty, its snapshot could not be restored: snapshot file .*not a windowlimit snapshot' "$dir/traefik.log" ||
		wl_die "persist: no log line says why the zone starts empty: $(grep -i windowlimit "$dir/traefik.log" | head -5)"
	wl_pass "persist: garbage over the snapshot: Traefik starts, the route serves 200, the log says why"
	kill "$WT_TRAEFIK_PID"
	wait "$WT_TRAEFIK_PID" 2>/dev/null || true
}

# fallback_part is the part of a source that finds nothing, on an instance
# of its own whose entry point trusts no proxy: /depth1/ and /depth2/ go
# through middlewares with ipStrategy depth 1 and depth 2, limit 3.
fallback_part() {
	local dir=$WL_WORK/fallback web ping depth path codes
	read -r web ping < <(wt_free_ports 2 | paste -sd' ')
	mkdir -p "$dir"
	cp -r "$WL_WORK/plugins-local" "$dir/"
	wt_dynamic "$dir/dynamic.yml" "$(
		wt_router ready /plain
		wt_router depth1 /depth1/ depth1-limit
		wt_router depth2 /depth2/ depth2-limit
	)" "$(
		wt_plugin depth1-limit "window: 1m" "limit: 3" "sourceCriterion: {ipStrategy: {depth: 1}}"
		wt_plugin depth2-limit "window: 1m" "limit: 3" "sourceCriterion: {ipStrategy: {depth: 2}}"
	)"
	wt_start_traefik "$web" "$ping" "$dir"
	wt_wait_status "http://127.0.0.1:$web/plain" 200 || wl_die "instance fallback never loaded its routers"
	for depth in 1 2; do
		path="http://127.0.0.1:$web/depth$depth/"
		# Client A sends an X-Forwarded-For of its own: Traefik drops it
		# (no trusted proxy), so the middleware finds no entry.
		codes=$(for _ in 1 2 3 4; do
			curl -s -o /dev/null -w '%{http_code} ' --max-time 5 --interface 127.0.0.1 -H 'X-Forwarded-For: 198.51.100.1, 198.51.100.2' "$path"
		done)
		[[ $codes == "200 200 200 429 " ]] || wl_die "depth $depth: client A (127.0.0.1): $codes, want 200 200 200 429"
		codes=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface 127.0.0.2 "$path")
		[[ $codes == 200 ]] || wl_die "depth $depth: client B (127.0.0.2) after A: $codes, want 200 (a count of its own, not one for all)"
		codes=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface 127.0.0.1 "$path")
		[[ $codes == 429 ]] || wl_die "depth $depth: client A again: $codes, want 429"
		[[ $(grep -c "windowlimit: warning: middleware \"depth$depth-limit@file\": sourceCriterion.ipStrategy.depth $depth found no client address: the request has no X-Forwarded-For.*counted by their remote address instead" "$dir/traefik.log") == 1 ]] ||
			wl_die "depth $depth: want one log line that the source found nothing, got: $(grep "depth$depth-limit" "$dir/traefik.log")"
		wl_pass "depth $depth, no trusted proxy: client A 200 200 200 429, then client B 200; logged once"
	done
	kill "$WT_TRAEFIK_PID"
}
# options_part is the part of bad options, on an instance of its own
# whose entry point trusts loopback's X-Forwarded-For and which has a
# catch-all router (PathPrefix(`/`), priority 1), as the quickstart does.
# A middleware with a misspelled option at each level (top,
# sourceCriterion, ipStrategy, redis, persist), typed as in a file and as
# labels give them (every value a string), or a value of the wrong kind,
# refuses every request of its router with 500: never served unlimited by
# the catch-all, nor with one count for every client behind the proxy. Its
# router shows as enabled in the API; Traefik's log names the option at
# load, and not again for each request. The same options spelled right, in
# other cases, limit each client apart; numbers are read in decimal.
options_part() {
	local dir=$WL_WORK/options web ping api mw want codes i body before after
	read -r web ping api < <(wt_free_ports 3 | paste -sd' ')
	mkdir -p "$dir"
	cp -r "$WL_WORK/plugins-local" "$dir/"
	# name|settings|the error's words; -s: every value a string.
	local typos=(
		'top-typo|countStatuss: ["401"]|unknown option countStatuss; did you mean countStatus?'
		'top-typo-s|countStatuss: "401"|unknown option countStatuss; did you mean countStatus?'
		'limit-typo-s|limt: "3"|unknown option limt; did you mean limit?'
		'source-typo|sourceCriterion: {requestHeader: X-Key}|unknown option sourceCriterion.requestHeader; did you mean requestHeaderName?'
		'source-typo-s|sourceCriterion: {requestHeader: "X-Key"}|unknown option sourceCriterion.requestHeader; did you mean requestHeaderName?'
		'ip-typo|sourceCriterion: {ipStrategy: {dept: 1}}|unknown option sourceCriterion.ipStrategy.dept; did you mean depth?'
		'ip-typo-s|sourceCriterion: {ipStrategy: {dept: "1"}}|unknown option sourceCriterion.ipStrategy.dept; did you mean depth?'
		'redis-typo|redis: {endpoint: ["127.0.0.1:1"]}|unknown option redis.endpoint; did you mean endpoints?'
		'redis-typo-s|redis: {endpoint: "127.0.0.1:1"}|unknown option redis.endpoint; did you mean endpoints?'
		'persist-typo|persist: {directory: /tmp/wl-persist-typo, intervall: 1s}|unknown option persist.intervall; did you mean interval?'
		'persist-typo-s|persist: {directory: "/tmp/wl-persist-typo", intervall: "1s"}|unknown option persist.intervall; did you mean interval?'
		'kind-s|maxKeys: "lots"|maxKeys: must be a whole number in decimal, got "lots"'
		'block-s|redis: "127.0.0.1:6379"|redis: must be a block of options, got "127.0.0.1:6379"'
		'huge-s|maxKeys: "1000000000000"|maxKeys: too large, got 1000000000000'
	)
	local routers middlewares t
	routers=$(
		wt_router ready /plain
		printf '    catchall:\n      rule: PathPrefix(`/`)\n      priority: 1\n      entryPoints: [web]\n      service: backend\n'
		wt_router spelled /spelled/ spelled-limit
		wt_router decimal /decimal/ decimal-limit
		for t in "${typos[@]}"; do wt_router "${t%%|*}" "/${t%%|*}/" "${t%%|*}"; done
	)
	middlewares=$(
		wt_plugin spelled-limit 'WINDOW: "1m"' 'Limit: "1"' 'sourcecriterion: {IPSTRATEGY: {Depth: "1"}}'
		wt_plugin decimal-limit 'window: "1m"' 'limit: "010"'
		for t in "${typos[@]}"; do
			mw=${t%%|*} t=${t#*|}
			if [[ $mw == limit-typo-s ]]; then
				wt_plugin "$mw" 'window: "1m"' "${t%%|*}"
			elif [[ $mw == *-s ]]; then
				wt_plugin "$mw" 'window: "1m"' 'limit: "1"' "${t%%|*}"
			else
				wt_plugin "$mw" "window: 1m" "limit: 1" "${t%%|*}"
			fi
		done
	)
	wt_dynamic "$dir/dynamic.yml" "$routers" "$middlewares"
	WL_TRAEFIK_TRUST_LOOPBACK=1 WL_TRAEFIK_EXTRA_ENTRYPOINTS="traefik=127.0.0.1:$api" \
		WL_TRAEFIK_EXTRA_STATIC=$'api:\n  insecure: true' wt_start_traefik "$web" "$ping" "$dir"
	wt_wait_status "http://127.0.0.1:$web/plain" 200 || wl_die "instance options never loaded its routers"
	# Four clients behind the proxy, one request each, then the first again.
	codes=$(for i in 1 2 3 4 1; do
		curl -s -o /dev/null -w '%{http_code} ' --max-time 5 -H "X-Forwarded-For: 198.51.100.$i" "http://127.0.0.1:$web/spelled/"
	done)
	[[ $codes == "200 200 200 200 429 " ]] || wl_die "options in other cases: $codes, want 200 200 200 200 429 (a count per client)"
	wl_pass "options spelled in other cases (WINDOW, Limit, sourcecriterion.IPSTRATEGY.Depth) accepted: 4 clients 200, the first again 429"
	codes=$(for i in $(seq 11); do curl -s -o /dev/null -w '%{http_code} ' --max-time 5 "http://127.0.0.1:$web/decimal/"; done)
	[[ $codes == "$(printf '200 %.0s' $(seq 10))429 " ]] || wl_die "limit \"010\": $codes, want 10 x 200 then 429 (decimal as written)"
	wl_pass "limit \"010\" is 10: 10 x 200, then 429"
	for t in "${typos[@]}"; do
		mw=${t%%|*} want=${t##*|}
		grep -qF "windowlimit: error: middleware \"$mw@file\" is misconfigured: $want" "$dir/traefik.log" ||
			wl_die "$mw: Traefik's log does not say '$want': $(grep -F "$mw" "$dir/traefik.log")"
		before=$(grep -cF "\"$mw@file\" is misconfigured" "$dir/traefik.log" || true)
		codes=$(for i in 1 2 3 4 1; do
			curl -s -o /dev/null -w '%{http_code} ' --max-time 5 -H "X-Forwarded-For: 198.51.100.$i" "http://127.0.0.1:$web/$mw/"
		done)
		[[ $codes == "500 500 500 500 500 " ]] ||
			wl_die "$mw: $codes, want 500 x 5: the route must be refused, not served unlimited by the catch-all"
		body=$(curl -s --max-time 5 "http://127.0.0.1:$web/$mw/")
		[[ $body == "rate limit misconfigured: "* ]] || wl_die "$mw: body '$body', want 'rate limit misconfigured: ...'"
		after=$(grep -cF "\"$mw@file\" is misconfigured" "$dir/traefik.log" || true)
		((after == before)) || wl_die "$mw: 6 refused requests logged $((after - before)) more lines, want none within the minute"
		curl -s --max-time 5 "http://127.0.0.1:$api/api/http/routers/$mw@file" | grep -q '"status":"enabled"' ||
			wl_die "$mw: the API does not show the router enabled: $(curl -s --max-time 5 "http://127.0.0.1:$api/api/http/routers/$mw@file")"
		wl_pass "$mw: 500 x 6 beside a catch-all router, body 'rate limit misconfigured', router enabled in the API; log at load: $want"
	done
	# A reload with the option spelled right brings the limit back.
	wt_dynamic "$dir/dynamic.yml" "$routers" "${middlewares//dept:/depth:}"
	wt_wait_status "http://127.0.0.1:$web/ip-typo/" 200 || wl_die "ip-typo: still refused after the reload that fixes it"
	codes=$(for i in 1 2 3 4 1; do
		curl -s -o /dev/null -w '%{http_code} ' --max-time 5 -H "X-Forwarded-For: 198.51.100.$i" "http://127.0.0.1:$web/ip-typo/"
	done)
	[[ $codes == "200 200 200 200 429 " ]] || wl_die "ip-typo fixed: $codes, want 200 200 200 200 429"
	wl_pass "ip-typo fixed by a reload: served again, a count per client"
	kill "$WT_TRAEFIK_PID"
}

# logs_part checks where the plugin's lines go, in four instances: log
# format common or json, with or without log.filePath, at DEBUG or INFO.
# Each has a middleware with limit 1 (its second request is rejected: a
# DEBUG line) and one with ipStrategy depth 1 behind no trusted proxy (the
# source finds nothing: an ERROR line). The lines must be Traefik's log
# entries, at their level, in its format, in its log file when it has
# one, and nowhere else: not on the process's output beside the file, and
# the DEBUG line not at INFO.
logs_part() {
	local spec format file level dir web ping log logfile out rej fb i n=0
	rej='windowlimit: info: middleware \"rej-limit@file\" rejected a request; 0 more rejections since the last line'
	fb='windowlimit: warning: middleware \"fb-limit@file\": sourceCriterion.ipStrategy.depth 1 found no client address'
	for spec in common:-:INFO common:file:DEBUG json:-:DEBUG json:file:INFO; do
		IFS=: read -r format file level <<<"$spec"
		n=$((n + 1))
		dir=$WL_WORK/logs$n
		read -r web ping < <(wt_free_ports 2 | paste -sd' ')
		mkdir -p "$dir"
		cp -r "$WL_WORK/plugins-local" "$dir/"
		wt_dynamic "$dir/dynamic.yml" "$(
			wt_router ready /plain
			wt_router rej /rej/ rej-limit
			wt_router fb /fb/ fb-limit
		)" "$(
			wt_plugin rej-limit "window: 1m" "limit: 1"
			wt_plugin fb-limit "window: 1m" "limit: 5" "sourceCriterion: {ipStrategy: {depth: 1}}"
		)"
		out=$dir/traefik.log log=$dir/traefik.log logfile=
		if [[ $file == file ]]; then
			log=$dir/file.log logfile=$dir/file.log
		fi
		WL_TRAEFIK_LOG_FORMAT=$format WL_TRAEFIK_LOG_FILE=$logfile WL_TRAEFIK_LOG_LEVEL=$level \
			wt_start_traefik "$web" "$ping" "$dir"
		wt_wait_status "http://127.0.0.1:$web/plain" 200 || wl_die "logs $spec: never loaded its routers"
		[[ $(for i in 1 2; do curl -s -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$web/rej/"; done) == "200 429 " ]] ||
			wl_die "logs $spec: /rej/ did not answer 200 then 429"
		[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$web/fb/") == 200 ]] || wl_die "logs $spec: /fb/ did not answer 200"
		for ((i = 0; i < 50; i++)); do
			grep -q 'found no client address' "$log" 2>/dev/null && break
			sleep 0.1
		done
		kill "$WT_TRAEFIK_PID"
		wait "$WT_TRAEFIK_PID" 2>/dev/null || true
		wl_forget "$WT_TRAEFIK_PID"
		# Without a file, the common format is in colour: drop the codes.
		sed -i 's/\x1b\[[0-9;]*m//g' "$log"
		# $1 the level's name in the format, $2 the line as the format
		# writes it: one entry of the plugin's, at that level.
		entry() { grep -F "$2" "$log" | grep -q "$1"; }
		if [[ $format == json ]]; then
			# One JSON object each, with the level and the line as message.
			entry '^{"plugin":"plugin-windowlimit",.*,"level":"error","message":"' "$fb" ||
				wl_die "logs $spec: no JSON error entry with the fallback line in $log: $(grep windowlimit: "$log")"
			if [[ $level == DEBUG ]]; then
				entry '^{"plugin":"plugin-windowlimit",.*,"level":"debug","message":"' "$rej" ||
					wl_die "logs $spec: no JSON debug entry with the rejection line in $log: $(grep windowlimit: "$log")"
			fi
			if grep 'windowlimit:' "$log" | grep -v '^{.*}$'; then
				wl_die "logs $spec: a plugin line that is no JSON object in $log"
			fi
		else
			entry '^[0-9TZ:+-]* ERR .*plugin=plugin-windowlimit' "${fb//\\/}" ||
				wl_die "logs $spec: no ERR entry with the fallback line in $log: $(grep windowlimit: "$log")"
			if [[ $level == DEBUG ]]; then
				entry '^[0-9TZ:+-]* DBG .*plugin=plugin-windowlimit' "${rej//\\/}" ||
					wl_die "logs $spec: no DBG entry with the rejection line in $log: $(grep windowlimit: "$log")"
			fi
			if grep 'windowlimit: ' "$log" | grep -Ev '^[0-9TZ:+-]+ (DBG|ERR) '; then
				wl_die "logs $spec: a plugin line that is no Traefik entry in $log"
			fi
		fi
		if [[ $level == INFO ]] && grep -F 'rejected a request' "$log"; then
			wl_die "logs $spec: the rejection line (DEBUG) is in the log at INFO"
		fi
		if [[ $log != "$out" ]] && grep 'windowlimit' "$out"; then
			wl_die "logs $spec: plugin lines on Traefik's output beside its log file"
		fi
		wl_pass "logs, format $format, $([[ $file == file ]] && echo with || echo no) log.filePath, level $level: the plugin's lines are Traefik's log entries ($([[ $level == DEBUG ]] && echo 'rejection at DEBUG, ')fallback at ERROR) in its format$([[ $file == file ]] && echo ', in the file only')"
	done
}
case ${WL_PARTS:-all} in
all) ;;
attack | fallback | quickstart | options | logs | reset | persist)
	"${WL_PARTS}_part"
	echo "e2e-traefik: $WL_CHECKS passed, 0 failed"
	exit 0
	;;
*) wl_die "WL_PARTS '$WL_PARTS': want all, attack, fallback, quickstart, options, logs, reset or persist" ;;
esac

# dynamic MESSAGE [ROUTER...] writes the file provider's configuration.
dynamic() {
	local message=$1
	shift
	wt_dynamic "$WL_WORK/dynamic.yml" "$(wt_router limited /limited api-limit; wt_router login /login login-limit; wt_router tiers /tiers tiers-limit; wt_router internal /internal internal-limit; wt_router plain /plain; printf '%s\n' "$@")" \
		"$(wt_plugin api-limit "window: 1m" "subWindow: 10s" "limit: 20" "headers: both" "message: \"$message\""
		wt_plugin login-limit "window: 15m" "limit: 5" 'countStatus: ["401"]'
		wt_plugin tiers-limit "window: 1m" "limit: 2" "sourceCriterion: {requestHeaderName: X-API-Key}" 'overrides: ["gold-key=600", "10.0.0.0/8=unlimited"]'
		wt_plugin internal-limit "window: 1m" "limit: 2" "sourceCriterion: {requestHeaderName: X-API-Key}" 'overrides: ["127.0.0.0/8=unlimited"]')"
}

dynamic "limited before reload"
wt_start_traefik "$WEB" "$PING"
wt_wait_status "http://127.0.0.1:$WEB/plain" 200 || wl_die "the plain router never answered 200"

# request N: one request to the limited router, checked against the seed's loop.
request() {
	local n=$1 status ra=
	status=$(wl_fetch "http://127.0.0.1:$WEB/limited")
	if ((n <= 20)); then
		[[ $status == 200 ]] || wl_die "request $n: status $status, want 200"
		[[ $(wl_header X-RateLimit-Remaining) == $((20 - n)) ]] || wl_die "request $n: X-RateLimit-Remaining '$(wl_header X-RateLimit-Remaining)', want $((20 - n))"
	else
		[[ $status == 429 ]] || wl_die "request $n: status $status, want 429"
		ra=$(wl_header Retry-After)
		[[ $ra =~ ^[0-9]+$ ]] && ((ra >= 1 && ra <= 60)) || wl_die "request $n: Retry-After '$ra', want 1..60"
		[[ $(wl_header X-RateLimit-Remaining) == 0 ]] || wl_die "request $n: X-RateLimit-Remaining '$(wl_header X-RateLimit-Remaining)'"
		[[ $(cat "$WL_WORK/body") == "limited after reload" ]] || wl_die "request $n: body '$(cat "$WL_WORK/body")': the reload did not reach the plugin"
	fi
	[[ $(wl_header X-RateLimit-Limit) == 20 ]] || wl_die "request $n: X-RateLimit-Limit '$(wl_header X-RateLimit-Limit)'"
	grep -qi '^RateLimit-Policy: "api-limit@file";q=20;w=60' "$WL_WORK/headers.txt" || wl_die "request $n: RateLimit-Policy missing"
	wl_pass "request $n: $status${ra:+ Retry-After $ra}"
}

for n in $(seq 1 10); do request "$n"; done

# Reload midway: a changed message and a new router. New runs again; the
# count must carry on.
dynamic "limited after reload" "$(wt_router reloaded /reloaded)"
wt_wait_status "http://127.0.0.1:$WEB/reloaded" 200 || wl_die "the reloaded configuration never became active"
wl_pass "dynamic configuration reloaded"

for n in $(seq 11 22); do request "$n"; done
if grep -i 'windowlimit.*error\|plugin.*error' "$WL_WORK/traefik.log"; then
	wl_die "traefik logged plugin errors"
fi
wl_pass "Traefik $WT_VERSION enforced 20 per minute through the plugin across a reload"
wl_count_status "memory" "$WEB" "$WEB" /login
wl_pass "$WL_SUMMARY"
wl_overrides "memory" "$WEB" "$WEB" /tiers /internal
wl_pass "$WL_SUMMARY"
# A server-sent event stream through the countStatus router: its first
# event must reach the client while the stream is still open (curl gives
# up after 3 s, exit 28). Under yaegi the proxy's flushes cannot reach
# the plugin's response writer; the plugin flushes streams itself.
events=$(curl -sN --max-time 3 --interface 127.0.9.1 "http://127.0.0.1:$WEB/login/events" || true)
[[ $events == "data: 1" ]] || wl_die "countStatus stream: the client read '$events' in 3 s, want the first event while the stream is open"
wl_pass "countStatus: a server-sent event stream streams through the plugin"
kill "$WT_TRAEFIK_PID"

# Redis part.
read -r REDIS WEB_A PING_A WEB_B PING_B < <(wt_free_ports 5 | paste -sd' ')
wl_redis_start "$REDIS"
# The cluster of the last part starts now, so that the two instances are
# started once, with every middleware.
wl_cluster_start
endpoints=$(printf '"%s", ' "${WL_CLUSTER_NODES[@]}")
endpoints="[${endpoints%, }]"

# instance NAME WEB PING starts a Traefik in $WL_WORK/NAME whose
# middlewares keep their counts in the redis-server (api-limit; chaos-limit
# and deny-limit, keyed by X-Key, with the default onStoreError and deny)
# and in the cluster (cluster-limit by address, cluster-user by X-User).
instance() {
	local dir=$WL_WORK/$1 redis="endpoints: [\"127.0.0.1:$REDIS\"]" cluster="endpoints: $endpoints"
	mkdir -p "$dir"
	cp -r "$WL_WORK/plugins-local" "$dir/"
	wt_dynamic "$dir/dynamic.yml" "$(
		wt_router ready /plain
		wt_router limited /limited api-limit
		wt_router hot /hot hot-limit
		wt_router login /login login-limit
		wt_router tiers /tiers tiers-limit
		wt_router internal /internal internal-limit
		wt_router chaos /chaos chaos-limit
		wt_router deny /deny deny-limit
		wt_router cluster /cluster cluster-limit cluster-user
	)" "$(
		wt_plugin api-limit "window: 1m" "limit: 20" "redis: {$redis, keyPrefix: \"e2e:\", lease: \"off\"}" "onStoreError: deny"
		wt_plugin hot-limit "window: 1m" "subWindow: 10s" "limit: 60" "redis: {$redis, keyPrefix: \"hot:\"}"
		wt_plugin login-limit "window: 15m" "limit: 5" 'countStatus: ["401"]' "redis: {$redis, keyPrefix: \"login:\"}"
		wt_plugin tiers-limit "window: 1m" "limit: 2" "sourceCriterion: {requestHeaderName: X-API-Key}" \
			'overrides: ["gold-key=600", "10.0.0.0/8=unlimited"]' "redis: {$redis, keyPrefix: \"tiers:\"}"
		wt_plugin internal-limit "window: 1m" "limit: 2" "sourceCriterion: {requestHeaderName: X-API-Key}" \
			'overrides: ["127.0.0.0/8=unlimited"]' "redis: {$redis, keyPrefix: \"internal:\"}"
		wt_plugin chaos-limit "window: 1m" "limit: 20" "sourceCriterion: {requestHeaderName: X-Key}" \
			"redis: {$redis, keyPrefix: \"chaos:\", lease: \"off\"}"
		wt_plugin deny-limit "window: 1m" "limit: 20" "sourceCriterion: {requestHeaderName: X-Key}" \
			"redis: {$redis, keyPrefix: \"deny:\"}" "onStoreError: deny"
		wt_plugin cluster-limit "window: 1m" "limit: 20" "redis: {$cluster, keyPrefix: \"cl:\", lease: \"off\"}" "onStoreError: deny"
		wt_plugin cluster-user "window: 1m" "limit: 1000" "headers: none" "sourceCriterion: {requestHeaderName: X-User}" \
			"redis: {$cluster, keyPrefix: \"cl:\", lease: \"off\"}" "onStoreError: deny"
	)"
	wt_start_traefik "$2" "$3" "$dir"
	# The routers load together: once the unlimited one answers, so does
	# the limited one, and waiting costs no request of the limit.
	wt_wait_status "http://127.0.0.1:$2/plain" 200 || wl_die "instance $1 never loaded its routers"
}
instance a "$WEB_A" "$PING_A"
instance b "$WEB_B" "$PING_B"

wl_redis_shared "$WEB_A" "$WEB_B" /limited 'e2e:api-limit@file:{127.0.0.1}'
if grep -i 'windowlimit.*error\|plugin.*error' "$WL_WORK"/a/traefik.log "$WL_WORK"/b/traefik.log; then
	wl_die "traefik logged plugin errors"
fi
wl_pass "$WL_SUMMARY"
wl_lease_shared "two instances through redis" "$WEB_A" "$WEB_B" /hot 'hot:hot-limit@file:{127.0.0.1}'
wl_pass "$WL_SUMMARY"
wl_overrides "redis" "$WEB_A" "$WEB_B" /tiers /internal
wl_pass "$WL_SUMMARY"
wl_count_status "redis" "$WEB_A" "$WEB_B" /login
[[ $(redis-cli -p "$WL_REDIS_PORT" --scan --pattern 'login:*') == 'login:login-limit@file:{127.0.0.1}' ]] ||
	wl_die "countStatus: keys in redis: '$(redis-cli -p "$WL_REDIS_PORT" --scan --pattern 'login:*')'"
wl_pass "$WL_SUMMARY"

# Chaos part, on the same two instances.
wl_redis_kill_under_load "$WEB_A"
wl_pass "$WL_SUMMARY"
wl_redis_restart "$WEB_A" "$WEB_B" 1 'chaos:chaos-limit@file:{after}'
grep -q "windowlimit: error: redis 127.0.0.1:$REDIS: .*onStoreError allow" "$WL_WORK/a/traefik.log" || wl_die "instance a logged no redis error"
grep -q "windowlimit: info: redis 127.0.0.1:$REDIS: redis store answers again" "$WL_WORK/a/traefik.log" || wl_die "instance a logged no recovery"
wl_pass "$WL_SUMMARY"

# Cluster part, on the same two instances: cluster-limit by address, then
# cluster-user by X-User (headers none), so two keys in different slots;
# cluster-user sees no request cluster-limit rejected, so it holds 20.
wl_cluster_shared "$WEB_A" "$WEB_B" /cluster 'cl:cluster-limit@file:{127.0.0.1}' 'cl:cluster-user@file:{alice}' 20
if grep "windowlimit: error: redis ${WL_CLUSTER_NODES[0]}" "$WL_WORK"/a/traefik.log "$WL_WORK"/b/traefik.log; then
	wl_die "traefik logged errors of the cluster"
fi
wl_pass "$WL_SUMMARY"

# What an operator reads in Traefik's log, on a third instance at DEBUG
# (the plugin's dry-run lines are DEBUG entries, its warnings ERROR ones;
# see logs_part): a dry-run line names the key only with logKey, and a zone that
# evicts keys that still counted says so (the sweeper of a 1 s window runs
# every second).
dir=$WL_WORK/ops
mkdir -p "$dir"
cp -r "$WL_WORK/plugins-local" "$dir/"
read -r WEB_OPS PING_OPS < <(wt_free_ports 2 | paste -sd' ')
wt_dynamic "$dir/dynamic.yml" "$(
	wt_router ready /plain
	wt_router dry /dry dry-limit
	wt_router drykey /drykey drykey-limit
	wt_router full /full full-limit
)" "$(
	wt_plugin dry-limit "window: 1m" "limit: 1" "dryRun: true" "sourceCriterion: {requestHeaderName: X-K}"
	wt_plugin drykey-limit "window: 1m" "limit: 1" "dryRun: true" "logKey: true" "sourceCriterion: {requestHeaderName: X-K}"
	wt_plugin full-limit "window: 1s" "limit: 5" "maxKeys: 2" "sourceCriterion: {requestHeaderName: X-K}"
)"
WL_TRAEFIK_LOG_LEVEL=DEBUG wt_start_traefik "$WEB_OPS" "$PING_OPS" "$dir"
wt_wait_status "http://127.0.0.1:$WEB_OPS/plain" 200 || wl_die "instance ops never loaded its routers"
for path in /dry /drykey; do
	for i in 1 2; do
		[[ $(curl -s -o /dev/null -w '%{http_code}' -H 'X-K: secret-key-7' "http://127.0.0.1:$WEB_OPS$path") == 200 ]] ||
			wl_die "dry run $path: request $i was not let through"
	done
done
for k in a b c d e; do curl -s -o /dev/null -H "X-K: flood-$k" "http://127.0.0.1:$WEB_OPS/full"; done
for ((i = 0; i < 50; i++)); do
	grep -q 'zone full (maxKeys 2)' "$dir/traefik.log" && grep -q 'drykey-limit@file.*would reject' "$dir/traefik.log" && break
	sleep 0.1
done
grep -q 'dry run: middleware "dry-limit@file" would reject a request' "$dir/traefik.log" ||
	wl_die "no dry-run line without the key for dry-limit"
if grep 'dry-limit@file.*secret-key-7' "$dir/traefik.log"; then
	wl_die "dry-limit logged the key without logKey"
fi
grep -q 'drykey-limit@file.*would reject key.*secret-key-7' "$dir/traefik.log" || wl_die "drykey-limit did not log the key with logKey"
grep -q 'full-limit@file.*zone full (maxKeys 2): evicted [0-9]* keys that still counted' "$dir/traefik.log" ||
	wl_die "no full-zone line for full-limit"
wl_pass "Traefik's log: dry run names the key only with logKey; a full zone (maxKeys 2) says so"

# A source that finds nothing.
fallback_part

# Misspelled options.
options_part

# Where the plugin's lines go, in each log setting.
logs_part

# countStatus under attack.
attack_part

# A reset is a reset.
reset_part

# Counts survive a restart.
persist_part

# The README's quickstart.
quickstart_part

echo "e2e-traefik: $WL_CHECKS passed, 0 failed"
