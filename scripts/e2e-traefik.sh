#!/usr/bin/env bash
# End-to-end test of the Traefik plugin in a real Traefik v3.6.12 (built from
# the Go module proxy's source and cached under $WINDOWLIMIT_CACHE): local
# plugin, file provider, a loopback backend. Limit 20 per minute: 22
# requests give 20 x 200 then 429 with Retry-After and the rate-limit
# headers, across a reload of the dynamic configuration made midway.
# Then the Redis part: two Traefik instances on one throwaway redis-server
# share one limit of 20 per minute: 11 requests to each, alternating, give
# exactly 20 x 200 in total, then 429.
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
set -euo pipefail
source "$(dirname "$0")/traefik-lib.sh"
CLUSTER_DIR=
MAIN_WORK=
cleanup() {
	[[ -n $CLUSTER_DIR ]] && "$WL_ROOT/scripts/redis-cluster.sh" stop "$CLUSTER_DIR" >/dev/null 2>&1
	[[ -n $MAIN_WORK ]] && WL_WORK=$MAIN_WORK
	wl_cleanup
}
trap cleanup EXIT

wl_need curl:curl redis-server:redis-server redis-cli:redis-tools
wl_setup
wl_start_backend
read -r WEB PING < <(wl_free_ports 2 | paste -sd' ')

# dynamic MESSAGE [EXTRA_ROUTER] writes the file provider's configuration.
dynamic() {
	cat >"$WL_WORK/dynamic.yml.tmp" <<-YAML
		http:
		  routers:
		    limited:
		      rule: PathPrefix(\`/limited\`)
		      entryPoints: [web]
		      service: backend
		      middlewares: [api-limit]
		    plain:
		      rule: PathPrefix(\`/plain\`)
		      entryPoints: [web]
		      service: backend
		$2
		  middlewares:
		    api-limit:
		      plugin:
		        windowlimit:
		          window: 1m
		          subWindow: 10s
		          limit: 20
		          headers: both
		          message: "$1"
		  services:
		    backend:
		      loadBalancer:
		        servers:
		          - url: http://127.0.0.1:$WL_BACKEND_PORT
	YAML
	mv "$WL_WORK/dynamic.yml.tmp" "$WL_WORK/dynamic.yml"
}

dynamic "limited before reload" ""
wl_start_traefik "$WEB" "$PING"
wl_wait_status "http://127.0.0.1:$WEB/plain" 200 || wl_die "the plain router never answered 200"

# request N: one request to the limited router, checked against the seed's loop.
request() {
	local n=$1 headers status
	headers=$(curl -s -D - -o "$WL_WORK/body" --max-time 5 "http://127.0.0.1:$WEB/limited")
	status=$(head -1 <<<"$headers" | awk '{print $2}')
	header() { tr -d '\r' <<<"$headers" | awk -v k="$1" 'tolower($1) == tolower(k) ":" {print $2}'; }
	if ((n <= 20)); then
		[[ $status == 200 ]] || wl_die "request $n: status $status, want 200"
		[[ $(header X-RateLimit-Remaining) == $((20 - n)) ]] || wl_die "request $n: X-RateLimit-Remaining '$(header X-RateLimit-Remaining)', want $((20 - n))"
	else
		[[ $status == 429 ]] || wl_die "request $n: status $status, want 429"
		local ra
		ra=$(header Retry-After)
		[[ $ra =~ ^[0-9]+$ ]] && ((ra >= 1 && ra <= 60)) || wl_die "request $n: Retry-After '$ra', want 1..60"
		[[ $(header X-RateLimit-Remaining) == 0 ]] || wl_die "request $n: X-RateLimit-Remaining '$(header X-RateLimit-Remaining)'"
		[[ $(cat "$WL_WORK/body") == "limited after reload" ]] || wl_die "request $n: body '$(cat "$WL_WORK/body")': the reload did not reach the plugin"
	fi
	[[ $(header X-RateLimit-Limit) == 20 ]] || wl_die "request $n: X-RateLimit-Limit '$(header X-RateLimit-Limit)'"
	grep -qi '^RateLimit-Policy: "api-limit@file";q=20;w=60' <<<"$headers" || wl_die "request $n: RateLimit-Policy missing"
	echo "request $n: $status${ra:+ Retry-After $ra}"
}

for n in $(seq 1 10); do request "$n"; done

# Reload midway: a changed message and a new router. New runs again; the
# count must carry on.
dynamic "limited after reload" "    reloaded:
      rule: PathPrefix(\`/reloaded\`)
      entryPoints: [web]
      service: backend"
wl_wait_status "http://127.0.0.1:$WEB/reloaded" 200 || wl_die "the reloaded configuration never became active"
echo "dynamic configuration reloaded"

for n in $(seq 11 22); do request "$n"; done
if grep -i 'windowlimit.*error\|plugin.*error' "$WL_WORK/traefik.log"; then
	wl_die "traefik logged plugin errors"
fi
echo "PASS: Traefik $WL_TRAEFIK_VERSION enforced 20 per minute through the plugin across a reload"
kill "$WL_TRAEFIK_PID"

# Redis part.
read -r REDIS WEB_A PING_A WEB_B PING_B < <(wl_free_ports 5 | paste -sd' ')
MAIN_WORK=$WL_WORK
# redis_start starts the throwaway redis-server on $REDIS, sets REDIS_PID
# and waits until it answers.
redis_start() {
	redis-server --port "$REDIS" --bind 127.0.0.1 --save '' --appendonly no --dir "$MAIN_WORK" \
		>>"$MAIN_WORK/redis.log" 2>&1 &
	REDIS_PID=$!
	WL_PIDS+=("$REDIS_PID")
	local i
	for ((i = 0; i < 100; i++)); do
		[[ $(redis-cli -p "$REDIS" ping 2>/dev/null) == PONG ]] && return 0
		sleep 0.02
	done
	wl_die "redis-server did not start"
}
redis_start
# The cluster of the last part starts now, so that the two instances are
# started once, with every middleware.
CLUSTER_DIR=$MAIN_WORK/cluster
addrs=$("$WL_ROOT/scripts/redis-cluster.sh" start "$CLUSTER_DIR" | sed -n 's/^ADDRS //p') ||
	wl_die "scripts/redis-cluster.sh start failed"
read -r -a nodes <<<"$addrs"
((${#nodes[@]} == 3)) || wl_die "scripts/redis-cluster.sh printed ADDRS '$addrs'"
endpoints=$(printf '"%s", ' "${nodes[@]}")
endpoints="[${endpoints%, }]"

# instance NAME WEB PING starts a Traefik in $MAIN_WORK/NAME whose
# middlewares keep their counts in the redis-server (api-limit; chaos-limit
# and deny-limit, keyed by X-Key, with the default onStoreError and deny)
# and in the cluster (cluster-limit by address, cluster-user by X-User).
instance() {
	WL_WORK="$MAIN_WORK/$1"
	mkdir -p "$WL_WORK"
	cp -r "$MAIN_WORK/plugins-local" "$WL_WORK/"
	cat >"$WL_WORK/dynamic.yml" <<-YAML
		http:
		  routers:
		    ready:
		      rule: PathPrefix(\`/plain\`)
		      entryPoints: [web]
		      service: backend
		    limited:
		      rule: PathPrefix(\`/limited\`)
		      entryPoints: [web]
		      service: backend
		      middlewares: [api-limit]
		    chaos:
		      rule: PathPrefix(\`/chaos\`)
		      entryPoints: [web]
		      service: backend
		      middlewares: [chaos-limit]
		    deny:
		      rule: PathPrefix(\`/deny\`)
		      entryPoints: [web]
		      service: backend
		      middlewares: [deny-limit]
		    cluster:
		      rule: PathPrefix(\`/cluster\`)
		      entryPoints: [web]
		      service: backend
		      middlewares: [cluster-limit, cluster-user]
		  middlewares:
		    api-limit:
		      plugin:
		        windowlimit:
		          window: 1m
		          limit: 20
		          redis:
		            endpoints: ["127.0.0.1:$REDIS"]
		            keyPrefix: "e2e:"
		          onStoreError: deny
		    chaos-limit:
		      plugin:
		        windowlimit:
		          window: 1m
		          limit: 20
		          sourceCriterion:
		            requestHeaderName: X-Key
		          redis:
		            endpoints: ["127.0.0.1:$REDIS"]
		            keyPrefix: "chaos:"
		    deny-limit:
		      plugin:
		        windowlimit:
		          window: 1m
		          limit: 20
		          sourceCriterion:
		            requestHeaderName: X-Key
		          redis:
		            endpoints: ["127.0.0.1:$REDIS"]
		            keyPrefix: "deny:"
		          onStoreError: deny
		    cluster-limit:
		      plugin:
		        windowlimit:
		          window: 1m
		          limit: 20
		          redis:
		            endpoints: $endpoints
		            keyPrefix: "cl:"
		          onStoreError: deny
		    cluster-user:
		      plugin:
		        windowlimit:
		          window: 1m
		          limit: 1000
		          headers: none
		          sourceCriterion:
		            requestHeaderName: X-User
		          redis:
		            endpoints: $endpoints
		            keyPrefix: "cl:"
		          onStoreError: deny
		  services:
		    backend:
		      loadBalancer:
		        servers:
		          - url: http://127.0.0.1:$WL_BACKEND_PORT
	YAML
	wl_start_traefik "$2" "$3"
	# The routers load together: once the unlimited one answers, so does
	# the limited one, and waiting costs no request of the limit.
	wl_wait_status "http://127.0.0.1:$2/plain" 200 || wl_die "instance $1 never loaded its routers"
	WL_WORK=$MAIN_WORK
}
instance a "$WEB_A" "$PING_A"
instance b "$WEB_B" "$PING_B"

ok=0
for n in $(seq 1 22); do
	if ((n % 2)); then port=$WEB_A name=a; else port=$WEB_B name=b; fi
	headers=$(curl -s -D - -o /dev/null --max-time 5 "http://127.0.0.1:$port/limited" | tr -d '\r')
	status=$(head -1 <<<"$headers" | awk '{print $2}')
	remaining=$(awk 'tolower($1) == "x-ratelimit-remaining:" {print $2}' <<<"$headers")
	if ((n <= 20)); then
		[[ $status == 200 ]] || wl_die "redis request $n (instance $name): status $status, want 200"
		[[ $remaining == $((20 - n)) ]] || wl_die "redis request $n (instance $name): X-RateLimit-Remaining '$remaining', want $((20 - n)): the count is not shared"
		ok=$((ok + 1))
	else
		[[ $status == 429 ]] || wl_die "redis request $n (instance $name): status $status, want 429"
		grep -qi '^Retry-After: [1-9]' <<<"$headers" || wl_die "redis request $n: no Retry-After"
	fi
	echo "redis request $n via instance $name: $status"
done
keys=$(redis-cli -p "$REDIS" --scan --pattern 'e2e:*')
[[ $keys == 'e2e:api-limit@file:{127.0.0.1}' ]] || wl_die "keys in redis: '$keys', want e2e:api-limit@file:{127.0.0.1}"
if grep -i 'windowlimit.*error\|plugin.*error' "$MAIN_WORK"/a/traefik.log "$MAIN_WORK"/b/traefik.log; then
	wl_die "traefik logged plugin errors"
fi
echo "PASS: two Traefik instances shared 20 per minute through Redis: $ok x 200 of 22, then 429; key $keys"

# Chaos part, on the same two instances.
# fetch URL [curl args] stores the response's headers and prints its status.
fetch() {
	local url=$1
	shift
	: >"$MAIN_WORK/headers"
	curl -s -D "$MAIN_WORK/headers" -o /dev/null --max-time 5 "$@" "$url" || true
	tr -d '\r' <"$MAIN_WORK/headers" >"$MAIN_WORK/headers.txt"
	head -1 "$MAIN_WORK/headers.txt" | awk '{print $2}'
}
header() { awk -v k="$1" 'tolower($1) == tolower(k) ":" {sub(/^[^:]*: /, ""); print}' "$MAIN_WORK/headers.txt"; }
# forget PID drops a process that has ended from those wl_cleanup kills.
forget() {
	local keep=() pid
	for pid in "${WL_PIDS[@]}"; do
		[[ $pid == "$1" ]] || keep+=("$pid")
	done
	WL_PIDS=("${keep[@]}")
}
now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
secs() { printf '%d.%02d' $(($1 / 1000000)) $(($1 % 1000000 / 10000)); }
# shared_limit WHAT PATH [curl args]: 22 requests alternating between the
# two instances give exactly 20 x 200, X-RateLimit-Remaining counting 19..0
# across both and X-RateLimit-Reset > 0 (a count kept in Redis: the allow
# policy answers Reset 0), then 429 with Retry-After.
shared_limit() {
	local what=$1 path=$2 n port name status
	shift 2
	for n in $(seq 1 22); do
		if ((n % 2)); then port=$WEB_A name=a; else port=$WEB_B name=b; fi
		status=$(fetch "http://127.0.0.1:$port$path" "$@")
		if ((n <= 20)); then
			[[ $status == 200 ]] || wl_die "$what: request $n (instance $name): status $status, want 200"
			[[ $(header X-RateLimit-Remaining) == $((20 - n)) ]] ||
				wl_die "$what: request $n (instance $name): X-RateLimit-Remaining '$(header X-RateLimit-Remaining)', want $((20 - n)): the count is not shared"
			[[ $(header X-RateLimit-Reset) =~ ^[1-9][0-9]*$ ]] ||
				wl_die "$what: request $n (instance $name): X-RateLimit-Reset '$(header X-RateLimit-Reset)', want > 0: not counted in Redis"
		else
			[[ $status == 429 ]] || wl_die "$what: request $n (instance $name): status $status, want 429"
			[[ $(header Retry-After) =~ ^[1-9][0-9]*$ ]] || wl_die "$what: request $n: Retry-After '$(header Retry-After)'"
		fi
	done
}
# stored_count KEY [redis-cli args] prints the sum of the sub-window counts
# of a sliding-window key: the hash's fields 0..k (its other field names the
# rule and holds the newest sub-window's index).
stored_count() {
	local key=$1
	shift
	redis-cli "$@" hgetall "$key" | awk 'NR % 2 { f = $0; next } f ~ /^[0-9]+$/ { s += $0 } END { print s + 0 }'
}

status=$(fetch "http://127.0.0.1:$WEB_A/deny" -H 'X-Key: deny-up')
[[ $status == 200 ]] || wl_die "deny-limit, redis up: status $status, want 200"
# 300 requests, 8 at a time, each on its own key (so none is over the
# limit); one line "status reset" each. Redis is killed after the 50th.
: >"$MAIN_WORK/load.out"
seq 1 300 | timeout 60 xargs -P 8 -I{} curl -s -o /dev/null --max-time 5 -H 'X-Key: load-{}' \
	-w '%{http_code} %header{x-ratelimit-reset}\n' "http://127.0.0.1:$WEB_A/chaos" >>"$MAIN_WORK/load.out" 2>/dev/null &
load_pid=$!
WL_PIDS+=("$load_pid")
for ((i = 0; i < 1000; i++)); do
	(($(wc -l <"$MAIN_WORK/load.out") >= 50)) && break
	kill -0 "$load_pid" 2>/dev/null || break
	sleep 0.01
done
at_kill=$(wc -l <"$MAIN_WORK/load.out")
kill -9 "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null || true
forget "$REDIS_PID"
wait "$load_pid" || true
forget "$load_pid"
read -r total ok fives counted policy < <(awk '{t++} $1 == 200 {o++} $1 ~ /^5/ {f++}
	$1 == 200 && $2 > 0 {c++} $1 == 200 && $2 == "0" {p++} END {print t + 0, o + 0, f + 0, c + 0, p + 0}' "$MAIN_WORK/load.out")
statuses=$(awk '{print $1}' "$MAIN_WORK/load.out" | sort | uniq -c | awk '{printf "%s x %s, ", $1, $2}')
((total == 300)) || wl_die "load: $total responses of 300 (${statuses%, })"
((fives == 0)) || wl_die "load: $fives x 5xx while redis was killed (${statuses%, })"
((ok == 300)) || wl_die "load: $ok x 200 of 300 with onStoreError allow (${statuses%, })"
((counted > 0 && policy > 0)) ||
	wl_die "load: $counted counted in redis, $policy answered by the policy (killed after $at_kill responses): the kill did not land during the load"
status=$(fetch "http://127.0.0.1:$WEB_A/deny" -H 'X-Key: deny-down')
[[ $status == 429 && $(header Retry-After) == 1 ]] ||
	wl_die "deny-limit, redis down: status $status Retry-After '$(header Retry-After)', want 429 with Retry-After 1"
echo "PASS: redis killed under load (after $at_kill responses): $ok x 200 of $total ($counted counted in redis, $policy by the allow policy), $fives x 5xx; deny-limit meanwhile: 429 Retry-After 1"

# Restart Redis on the same port; poll, with a fresh key each time, a request
# to instance a then one to b: b answers Remaining 18 only when both
# requests were counted in one shared store, which can only be Redis. (An
# instance answering from the allow policy says Remaining 19, Reset 0.)
t0=$(now_us)
redis_start
up=$(($(now_us) - t0)) at_a= at_b=
: >"$MAIN_WORK/recovery.log"
for ((poll = 1; ; poll++)); do
	sa=$(fetch "http://127.0.0.1:$WEB_A/chaos" -H "X-Key: recover-$poll")
	line="a $sa Remaining $(header X-RateLimit-Remaining) Reset $(header X-RateLimit-Reset)"
	[[ -z $at_a && $(header X-RateLimit-Reset) =~ ^[1-9] ]] && at_a=$(($(now_us) - t0))
	sb=$(fetch "http://127.0.0.1:$WEB_B/chaos" -H "X-Key: recover-$poll")
	echo "$(secs $(($(now_us) - t0))) s: poll $poll: $line; b $sb Remaining $(header X-RateLimit-Remaining) Reset $(header X-RateLimit-Reset)" >>"$MAIN_WORK/recovery.log"
	[[ -z $at_b && $(header X-RateLimit-Reset) =~ ^[1-9] ]] && at_b=$(($(now_us) - t0))
	[[ $sa == 200 && $sb == 200 ]] || { cat "$MAIN_WORK/recovery.log" >&2; wl_die "recovery poll $poll: instance a $sa, instance b $sb, want 200"; }
	[[ $(header X-RateLimit-Remaining) == 18 ]] && break
	(($(now_us) - t0 < 5000000)) || { cat "$MAIN_WORK/recovery.log" >&2; wl_die "the two instances did not share a count within 5 s of the restart"; }
done
rec=$(($(now_us) - t0))
((rec <= 1000000)) || { cat "$MAIN_WORK/recovery.log" >&2; wl_die "the shared limit came back $(secs "$rec") s after the restart, want <= 1 s"; }
shared_limit "after the restart" /chaos -H 'X-Key: after'
count=$(stored_count 'chaos:chaos-limit@file:{after}' -p "$REDIS")
((count == 20)) || wl_die "chaos:chaos-limit@file:{after} holds $count in redis, want 20"
for ((i = 1; ; i++)); do
	[[ $(fetch "http://127.0.0.1:$WEB_A/deny" -H "X-Key: deny-after-$i") == 200 ]] && break
	((i < 100)) || wl_die "deny-limit still refuses 2 s after the restart"
	sleep 0.02
done
grep -q "windowlimit: redis 127.0.0.1:$REDIS: .*onStoreError allow" "$MAIN_WORK/a/traefik.log" || wl_die "instance a logged no redis error"
grep -q "windowlimit: redis 127.0.0.1:$REDIS: answering again" "$MAIN_WORK/a/traefik.log" || wl_die "instance a logged no recovery"
echo "PASS: redis restarted: recovered in $(secs "$rec") s (one count shared by both instances at poll $poll; redis up after $(secs "$up") s, instance a counting in it after $(secs "$at_a") s, b after $(secs "$at_b") s); then 20 x 200 alternating on a fresh key, 429, and chaos:chaos-limit@file:{after} = 20 in redis"

# Cluster part, on the same two instances: cluster-limit by address, then
# cluster-user by X-User (headers none), so two keys in different slots.
shared_limit "cluster" /cluster -H 'X-User: alice'
found=
for node in "${nodes[@]}"; do
	for key in $(redis-cli -p "${node##*:}" --scan --pattern 'cl:*'); do
		found+="$key@$node "
	done
done
[[ $found == *'cl:cluster-limit@file:{127.0.0.1}@'* && $found == *'cl:cluster-user@file:{alice}@'* && $(wc -w <<<"$found") == 2 ]] ||
	wl_die "keys in the cluster: '$found', want cl:cluster-limit@file:{127.0.0.1} and cl:cluster-user@file:{alice}"
ip_count=$(stored_count 'cl:cluster-limit@file:{127.0.0.1}' -c -p "${nodes[0]##*:}")
user_count=$(stored_count 'cl:cluster-user@file:{alice}' -c -p "${nodes[0]##*:}")
((ip_count == 20)) || wl_die "cl:cluster-limit@file:{127.0.0.1} holds $ip_count, want 20"
((user_count == 20)) || wl_die "cl:cluster-user@file:{alice} holds $user_count, want 20: a request cluster-limit rejected reached cluster-user"
if grep "windowlimit: redis ${nodes[0]}" "$MAIN_WORK"/a/traefik.log "$MAIN_WORK"/b/traefik.log; then
	wl_die "traefik logged errors of the cluster"
fi
echo "PASS: two Traefik instances on a 3-master redis cluster: 20 x 200 of 22 alternating, then 429; keys ${found% } (cluster-limit = $ip_count, cluster-user = $user_count)"
