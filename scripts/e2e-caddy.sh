#!/usr/bin/env bash
# End-to-end test of the Caddy module in a real Caddy binary built by
# ./xcaddy.sh, driven over HTTP on loopback ports:
#
#  1. limit 20 per minute: 22 requests give 20 x 200 then 429 with
#     Retry-After > 0 and the rate-limit headers, across a `caddy reload`
#     made after the 10th request (which must keep the count);
#  2. the metrics on the admin endpoint count the decisions;
#  3. `caddy validate` and `caddy adapt` accept Caddyfile.example, and the
#     example, run on a free port, limits its API and login as it says;
#  4. two Caddy instances share one limit of 20 per minute through a
#     throwaway redis-server: 11 requests to each, alternating, give exactly
#     20 x 200 in total, then 429;
#  5. chaos: the redis-server is killed (kill -9) while 300 requests, 8 at a
#     time, each on its own key, run against one instance of a zone with the
#     default `on_store_error allow`: every response is 200 (some counted in
#     Redis, the rest answered by the policy), none is a 5xx, and a zone with
#     `on_store_error deny` answers 429 with Retry-After: 1 meanwhile. Redis
#     is restarted on the same port: the two instances count one shared limit
#     again within 2 s (the recovery time is printed), then give exactly
#     20 x 200 and 429 on a fresh key, whose count is in the new Redis;
#  6. two instances on a throwaway three-master Redis Cluster
#     (scripts/redis-cluster.sh), two zones on different keys: exactly
#     20 x 200 across the instances, then 429, and both keys in the cluster.
set -euo pipefail
source "$(dirname "$0")/caddy-lib.sh"
CLUSTER_DIR=
cleanup() {
	[[ -n $CLUSTER_DIR ]] && "$WC_ROOT/scripts/redis-cluster.sh" stop "$CLUSTER_DIR" >/dev/null 2>&1
	wc_cleanup
}
trap cleanup EXIT

wc_need curl:curl ss:iproute2 redis-server:redis-server redis-cli:redis-tools
wc_setup
read -r WEB ADMIN EX_WEB EX_ADMIN REDIS WEB_A ADMIN_A WEB_B ADMIN_B WEB_C ADMIN_C WEB_D ADMIN_D < <(wc_free_ports 13 | paste -sd' ')
checks=0
pass() {
	checks=$((checks + 1))
	echo "ok: $*"
}

# site MESSAGE writes the Caddyfile of part 1.
site() {
	cat >"$WC_WORK/Caddyfile" <<-EOF
		{
			admin 127.0.0.1:$ADMIN
			persist_config off
		}
		:$WEB {
			bind 127.0.0.1
			rate_limit {
				zone e2e {
					window 1m
					sub_window 10s
					limit 20
				}
				headers both
			}
			respond "$1"
		}
	EOF
}

# fetch URL [curl args] stores the response's headers and body and prints
# its status.
fetch() {
	local url=$1
	shift
	: >"$WC_WORK/headers"
	curl -s -D "$WC_WORK/headers" -o "$WC_WORK/body" --max-time 5 "$@" "$url" || true
	tr -d '\r' <"$WC_WORK/headers" >"$WC_WORK/headers.txt"
	head -1 "$WC_WORK/headers.txt" | awk '{print $2}'
}
header() { awk -v k="$1" 'tolower($1) == tolower(k) ":" {sub(/^[^:]*: /, ""); print}' "$WC_WORK/headers.txt"; }

# Part 1: 22 requests across a reload.
site "before reload"
wc_start "$WC_WORK/Caddyfile" "$ADMIN"
request() {
	local n=$1 status ra=
	status=$(fetch "http://127.0.0.1:$WEB/")
	if ((n <= 20)); then
		[[ $status == 200 ]] || wc_die "request $n: status $status, want 200"
		[[ $(header X-RateLimit-Remaining) == $((20 - n)) ]] ||
			wc_die "request $n: X-RateLimit-Remaining '$(header X-RateLimit-Remaining)', want $((20 - n))"
	else
		[[ $status == 429 ]] || wc_die "request $n: status $status, want 429"
		ra=$(header Retry-After)
		[[ $ra =~ ^[0-9]+$ ]] && ((ra >= 1 && ra <= 70)) || wc_die "request $n: Retry-After '$ra', want 1..70"
		[[ $(header X-RateLimit-Remaining) == 0 ]] || wc_die "request $n: X-RateLimit-Remaining '$(header X-RateLimit-Remaining)', want 0"
	fi
	if ((n > 10 && n <= 20)); then
		[[ $(cat "$WC_WORK/body") == "after reload" ]] || wc_die "request $n: body '$(cat "$WC_WORK/body")': the reload did not take"
	fi
	[[ $(header X-RateLimit-Limit) == 20 ]] || wc_die "request $n: X-RateLimit-Limit '$(header X-RateLimit-Limit)', want 20"
	[[ $(header RateLimit-Policy) == '"e2e";q=20;w=60' ]] || wc_die "request $n: RateLimit-Policy '$(header RateLimit-Policy)'"
	pass "request $n: $status${ra:+ Retry-After $ra}"
}
for n in $(seq 1 10); do request "$n"; done
site "after reload"
"$WC_CADDY" reload --config "$WC_WORK/Caddyfile" --address "127.0.0.1:$ADMIN" >"$WC_WORK/reload.log" 2>&1 ||
	{ cat "$WC_WORK/reload.log" >&2; wc_die "caddy reload failed"; }
pass "caddy reload"
for n in $(seq 11 22); do request "$n"; done

# Part 2: metrics.
curl -s --max-time 5 "http://127.0.0.1:$ADMIN/metrics" >"$WC_WORK/metrics"
grep -q '^caddy_http_rate_limit_requests_total{decision="allowed",zone="e2e"} 20$' "$WC_WORK/metrics" ||
	wc_die "metrics: allowed count is not 20: $(grep rate_limit "$WC_WORK/metrics" || echo none)"
grep -q '^caddy_http_rate_limit_requests_total{decision="denied",zone="e2e"} 2$' "$WC_WORK/metrics" ||
	wc_die "metrics: denied count is not 2: $(grep rate_limit "$WC_WORK/metrics" || echo none)"
grep -q '^caddy_http_rate_limit_keys{zone="e2e"} 1$' "$WC_WORK/metrics" || wc_die "metrics: keys gauge is not 1"
pass "metrics count 20 allowed, 2 denied, 1 key"
wc_stop

# Part 3: Caddyfile.example.
(cd "$WC_ROOT" && "$WC_CADDY" validate --config Caddyfile.example) >"$WC_WORK/validate.log" 2>&1 ||
	{ cat "$WC_WORK/validate.log" >&2; wc_die "caddy validate rejected Caddyfile.example"; }
pass "caddy validate --config Caddyfile.example"
(cd "$WC_ROOT" && "$WC_CADDY" adapt --config Caddyfile.example) >"$WC_WORK/example.json" 2>"$WC_WORK/adapt.log" ||
	{ cat "$WC_WORK/adapt.log" >&2; wc_die "caddy adapt rejected Caddyfile.example"; }
grep -q '"handler":"rate_limit"' "$WC_WORK/example.json" || wc_die "the adapted example has no rate_limit handler"
pass "caddy adapt --config Caddyfile.example"

# The example as shipped, moved to free ports.
{
	printf '{\n\tadmin 127.0.0.1:%s\n\tpersist_config off\n}\n' "$EX_ADMIN"
	sed "s/^:8080 {/:$EX_WEB {/" "$WC_ROOT/Caddyfile.example"
} >"$WC_WORK/Caddyfile.example"
wc_start "$WC_WORK/Caddyfile.example" "$EX_ADMIN"
for n in $(seq 1 10); do
	status=$(fetch "http://127.0.0.1:$EX_WEB/api/items")
	[[ $status == 200 ]] || wc_die "example: /api/items request $n: $status, want 200"
done
status=$(fetch "http://127.0.0.1:$EX_WEB/api/items")
[[ $status == 429 ]] || wc_die "example: 11th /api/items: $status, want 429"
grep -q '"zone": "api"' "$WC_WORK/body" || wc_die "example: 429 body '$(cat "$WC_WORK/body")' does not name the zone"
[[ $(header Content-Type) == application/json ]] || wc_die "example: 429 Content-Type '$(header Content-Type)'"
pass "example: 10 x 200 then 429 on /api/items: $(cat "$WC_WORK/body")"
status=$(fetch "http://127.0.0.1:$EX_WEB/api/items" -H 'X-API-Key: team-a')
[[ $status == 200 ]] || wc_die "example: an API key's first request: $status, want 200"
pass "example: an API key has its own budget"
for n in $(seq 1 5); do
	status=$(fetch "http://127.0.0.1:$EX_WEB/login" -X POST)
	[[ $status == 200 ]] || wc_die "example: login $n: $status, want 200"
done
status=$(fetch "http://127.0.0.1:$EX_WEB/login" -X POST)
[[ $status == 429 ]] || wc_die "example: 6th login: $status, want 429"
pass "example: 5 logins then 429"
wc_stop

# Part 4: two instances, one limit, through Redis.
# redis_start starts the throwaway redis-server on $REDIS, sets REDIS_PID
# and waits until it answers.
redis_start() {
	redis-server --port "$REDIS" --bind 127.0.0.1 --save '' --appendonly no --dir "$WC_WORK" \
		>>"$WC_WORK/redis.log" 2>&1 &
	REDIS_PID=$!
	WC_PIDS+=("$REDIS_PID")
	local n
	for n in $(seq 100); do
		[[ $(redis-cli -p "$REDIS" ping 2>/dev/null) == PONG ]] && return 0
		sleep 0.02
	done
	wc_die "redis-server did not start"
}
redis_start
# instance WEB ADMIN writes the Caddyfile of one instance and starts it:
# / is part 4's zone; /chaos and /deny are part 5's, keyed by X-Key, with
# the default on_store_error (allow) and with deny.
instance() {
	cat >"$WC_WORK/Caddyfile.$1" <<-EOF
		{
			admin 127.0.0.1:$2
			persist_config off
		}
		:$1 {
			bind 127.0.0.1
			handle /chaos {
				rate_limit {
					zone chaos {
						key {http.request.header.X-Key}
						window 1m
						limit 20
					}
					store redis {
						address 127.0.0.1:$REDIS
						key_prefix chaos:
					}
				}
				respond "chaos"
			}
			handle /deny {
				rate_limit {
					zone deny {
						key {http.request.header.X-Key}
						window 1m
						limit 20
					}
					store redis {
						address 127.0.0.1:$REDIS
						key_prefix deny:
					}
					on_store_error deny
				}
				respond "deny"
			}
			handle {
				rate_limit {
					zone e2e {
						window 1m
						limit 20
					}
					store redis {
						address 127.0.0.1:$REDIS
						key_prefix e2e:
					}
					on_store_error deny
				}
				respond "ok"
			}
		}
	EOF
	wc_start "$WC_WORK/Caddyfile.$1" "$2"
}
instance "$WEB_A" "$ADMIN_A"
instance "$WEB_B" "$ADMIN_B"
ok=0
for n in $(seq 1 22); do
	if ((n % 2)); then port=$WEB_A name=a; else port=$WEB_B name=b; fi
	status=$(fetch "http://127.0.0.1:$port/")
	if ((n <= 20)); then
		[[ $status == 200 ]] || wc_die "redis request $n (instance $name): $status, want 200"
		[[ $(header X-RateLimit-Remaining) == $((20 - n)) ]] ||
			wc_die "redis request $n (instance $name): X-RateLimit-Remaining '$(header X-RateLimit-Remaining)', want $((20 - n)): the count is not shared"
		ok=$((ok + 1))
	else
		[[ $status == 429 ]] || wc_die "redis request $n (instance $name): $status, want 429"
		[[ $(header Retry-After) =~ ^[1-9][0-9]*$ ]] || wc_die "redis request $n: Retry-After '$(header Retry-After)'"
	fi
done
keys=$(redis-cli -p "$REDIS" --scan --pattern 'e2e:*')
[[ $keys == 'e2e:e2e:{127.0.0.1}' ]] || wc_die "keys in redis: '$keys', want e2e:e2e:{127.0.0.1}"
pass "two instances through redis: $ok x 200 of 22 requests, then 429; key $keys"
if grep -i 'redis store failed' "$WC_WORK"/caddy-"$ADMIN_A".log "$WC_WORK"/caddy-"$ADMIN_B".log; then
	wc_die "caddy logged redis errors"
fi

# Part 5: chaos, on the same two instances.
# forget PID drops a process that has ended from those wc_stop kills.
forget() {
	local keep=() pid
	for pid in "${WC_PIDS[@]}"; do
		[[ $pid == "$1" ]] || keep+=("$pid")
	done
	WC_PIDS=("${keep[@]}")
}
now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
# shared_limit WHAT PORT_A PORT_B PATH [curl args]: 22 requests alternating
# between two instances give exactly 20 x 200, X-RateLimit-Remaining
# counting 19..0 across both and X-RateLimit-Reset > 0 (a count kept in
# Redis: the allow policy answers Reset 0), then 429 with Retry-After.
shared_limit() {
	local what=$1 a=$2 b=$3 path=$4 n port name status
	shift 4
	for n in $(seq 1 22); do
		if ((n % 2)); then port=$a name=a; else port=$b name=b; fi
		status=$(fetch "http://127.0.0.1:$port$path" "$@")
		if ((n <= 20)); then
			[[ $status == 200 ]] || wc_die "$what: request $n (instance $name): $status, want 200"
			[[ $(header X-RateLimit-Remaining) == $((20 - n)) ]] ||
				wc_die "$what: request $n (instance $name): X-RateLimit-Remaining '$(header X-RateLimit-Remaining)', want $((20 - n)): the count is not shared"
			[[ $(header X-RateLimit-Reset) =~ ^[1-9][0-9]*$ ]] ||
				wc_die "$what: request $n (instance $name): X-RateLimit-Reset '$(header X-RateLimit-Reset)', want > 0: not counted in Redis"
		else
			[[ $status == 429 ]] || wc_die "$what: request $n (instance $name): $status, want 429"
			[[ $(header Retry-After) =~ ^[1-9][0-9]*$ ]] || wc_die "$what: request $n: Retry-After '$(header Retry-After)'"
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
metric() { awk -v m="$1" '$1 == m {print $2}' "$WC_WORK/metrics"; }

status=$(fetch "http://127.0.0.1:$WEB_A/deny" -H 'X-Key: deny-up')
[[ $status == 200 ]] || wc_die "deny zone, redis up: $status, want 200"
# 300 requests, 8 at a time, each on its own key (so none is over the
# limit); one line "status reset" each. Redis is killed after the 50th.
: >"$WC_WORK/load.out"
seq 1 300 | timeout 60 xargs -P 8 -I{} curl -s -o /dev/null --max-time 5 -H 'X-Key: load-{}' \
	-w '%{http_code} %header{x-ratelimit-reset}\n' "http://127.0.0.1:$WEB_A/chaos" >>"$WC_WORK/load.out" 2>/dev/null &
load_pid=$!
WC_PIDS+=("$load_pid")
for n in $(seq 1000); do
	(($(wc -l <"$WC_WORK/load.out") >= 50)) && break
	kill -0 "$load_pid" 2>/dev/null || break
	sleep 0.01
done
at_kill=$(wc -l <"$WC_WORK/load.out")
kill -9 "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null || true
forget "$REDIS_PID"
wait "$load_pid" || true
forget "$load_pid"
read -r total ok fives counted policy < <(awk '{t++} $1 == 200 {o++} $1 ~ /^5/ {f++}
	$1 == 200 && $2 > 0 {c++} $1 == 200 && $2 == "0" {p++} END {print t + 0, o + 0, f + 0, c + 0, p + 0}' "$WC_WORK/load.out")
statuses=$(awk '{print $1}' "$WC_WORK/load.out" | sort | uniq -c | awk '{printf "%s x %s, ", $1, $2}')
((total == 300)) || wc_die "load: $total responses of 300 (${statuses%, })"
((fives == 0)) || wc_die "load: $fives x 5xx while redis was killed (${statuses%, })"
((ok == 300)) || wc_die "load: $ok x 200 of 300 with on_store_error allow (${statuses%, })"
((counted > 0 && policy > 0)) ||
	wc_die "load: $counted counted in redis, $policy answered by the policy (killed after $at_kill responses): the kill did not land during the load"
status=$(fetch "http://127.0.0.1:$WEB_A/deny" -H 'X-Key: deny-down')
[[ $status == 429 && $(header Retry-After) == 1 ]] ||
	wc_die "deny zone, redis down: $status Retry-After '$(header Retry-After)', want 429 with Retry-After 1"
curl -s --max-time 5 "http://127.0.0.1:$ADMIN_A/metrics" >"$WC_WORK/metrics"
fallbacks=$(metric caddy_http_rate_limit_store_fallbacks_total)
open=$(metric caddy_http_rate_limit_store_breakers_open)
[[ $fallbacks =~ ^[0-9]+$ ]] && ((fallbacks >= policy + 1)) ||
	wc_die "metrics: store_fallbacks_total '$fallbacks', want >= $((policy + 1))"
[[ $open =~ ^[0-9]+$ ]] && ((open >= 1)) || wc_die "metrics: store_breakers_open '$open' while redis is down, want >= 1"
pass "redis killed under load (after $at_kill responses): $ok x 200 of $total ($counted counted in redis, $policy by the allow policy), $fives x 5xx; deny zone meanwhile: 429 Retry-After 1; metrics: $fallbacks fallbacks, $open breakers open"

# Restart Redis on the same port; poll, with a fresh key each time, a request
# to instance a then one to b: b answers Remaining 18 only when both
# requests were counted in one shared store, which can only be Redis. (An
# instance answering from the allow policy says Remaining 19, Reset 0.)
secs() { printf '%d.%02d' $(($1 / 1000000)) $(($1 % 1000000 / 10000)); }
t0=$(now_us)
redis_start
up=$(($(now_us) - t0)) at_a= at_b=
: >"$WC_WORK/recovery.log"
for ((poll = 1; ; poll++)); do
	sa=$(fetch "http://127.0.0.1:$WEB_A/chaos" -H "X-Key: recover-$poll")
	line="a $sa Remaining $(header X-RateLimit-Remaining) Reset $(header X-RateLimit-Reset)"
	[[ -z $at_a && $(header X-RateLimit-Reset) =~ ^[1-9] ]] && at_a=$(($(now_us) - t0))
	sb=$(fetch "http://127.0.0.1:$WEB_B/chaos" -H "X-Key: recover-$poll")
	echo "$(secs $(($(now_us) - t0))) s: poll $poll: $line; b $sb Remaining $(header X-RateLimit-Remaining) Reset $(header X-RateLimit-Reset)" >>"$WC_WORK/recovery.log"
	[[ -z $at_b && $(header X-RateLimit-Reset) =~ ^[1-9] ]] && at_b=$(($(now_us) - t0))
	[[ $sa == 200 && $sb == 200 ]] || { cat "$WC_WORK/recovery.log" >&2; wc_die "recovery poll $poll: instance a $sa, instance b $sb, want 200"; }
	[[ $(header X-RateLimit-Remaining) == 18 ]] && break
	(($(now_us) - t0 < 5000000)) || { cat "$WC_WORK/recovery.log" >&2; wc_die "the two instances did not share a count within 5 s of the restart"; }
done
# The breaker probes every 250 ms, but go-redis, once a pool has failed
# pool_size dials (the loaded instance does, during the outage), stops
# dialling and retries once a second in the background: about 1.05 s here.
rec=$(($(now_us) - t0))
((rec <= 2000000)) || { cat "$WC_WORK/recovery.log" >&2; wc_die "the shared limit came back $(secs "$rec") s after the restart, want <= 2 s"; }
shared_limit "after the restart" "$WEB_A" "$WEB_B" /chaos -H 'X-Key: after'
count=$(stored_count 'chaos:chaos:{after}' -p "$REDIS")
((count == 20)) || wc_die "chaos:chaos:{after} holds $count in redis, want 20"
for ((i = 1; ; i++)); do
	[[ $(fetch "http://127.0.0.1:$WEB_A/deny" -H "X-Key: deny-after-$i") == 200 ]] && break
	((i < 100)) || wc_die "the deny zone still refuses 2 s after the restart"
	sleep 0.02
done
grep -q 'redis store failed' "$WC_WORK/caddy-$ADMIN_A.log" || wc_die "instance a logged no redis error"
grep -q 'redis store answers again' "$WC_WORK/caddy-$ADMIN_A.log" || wc_die "instance a logged no recovery"
pass "redis restarted: recovered in $(secs "$rec") s (one count shared by both instances at poll $poll; redis up after $(secs "$up") s, instance a counting in it after $(secs "$at_a") s, b after $(secs "$at_b") s); then 20 x 200 alternating on a fresh key, 429, and chaos:chaos:{after} = 20 in redis"
wc_stop

# Part 6: two instances on a Redis Cluster, two zones on different keys
# (the client IP and X-User), so in different slots.
CLUSTER_DIR=$WC_WORK/cluster
addrs=$("$WC_ROOT/scripts/redis-cluster.sh" start "$CLUSTER_DIR" | sed -n 's/^ADDRS //p') ||
	wc_die "scripts/redis-cluster.sh start failed"
read -r -a nodes <<<"$addrs"
((${#nodes[@]} == 3)) || wc_die "scripts/redis-cluster.sh printed ADDRS '$addrs'"
cluster_instance() {
	cat >"$WC_WORK/Caddyfile.$1" <<-EOF
		{
			admin 127.0.0.1:$2
			persist_config off
		}
		:$1 {
			bind 127.0.0.1
			rate_limit {
				zone ip {
					window 1m
					limit 20
				}
				zone user {
					key {http.request.header.X-User}
					window 1m
					limit 1000
				}
				store redis {
					addresses ${nodes[*]}
					key_prefix cl:
				}
				on_store_error deny
			}
			respond "ok"
		}
	EOF
	wc_start "$WC_WORK/Caddyfile.$1" "$2"
}
cluster_instance "$WEB_C" "$ADMIN_C"
cluster_instance "$WEB_D" "$ADMIN_D"
shared_limit "cluster" "$WEB_C" "$WEB_D" / -H 'X-User: alice'
found=
for node in "${nodes[@]}"; do
	for key in $(redis-cli -p "${node##*:}" --scan --pattern 'cl:*'); do
		found+="$key@$node "
	done
done
[[ $found == *'cl:ip:{127.0.0.1}@'* && $found == *'cl:user:{alice}@'* && $(wc -w <<<"$found") == 2 ]] ||
	wc_die "keys in the cluster: '$found', want cl:ip:{127.0.0.1} and cl:user:{alice}"
ip_count=$(stored_count 'cl:ip:{127.0.0.1}' -c -p "${nodes[0]##*:}")
user_count=$(stored_count 'cl:user:{alice}' -c -p "${nodes[0]##*:}")
((ip_count == 20)) || wc_die "cl:ip:{127.0.0.1} holds $ip_count, want 20"
((user_count >= 20 && user_count <= 22)) || wc_die "cl:user:{alice} holds $user_count, want 20..22"
if grep -i 'redis store failed' "$WC_WORK/caddy-$ADMIN_C.log" "$WC_WORK/caddy-$ADMIN_D.log"; then
	wc_die "caddy logged redis errors on the cluster"
fi
pass "two instances on a 3-master redis cluster: 20 x 200 of 22 alternating, then 429; keys ${found% } (ip = $ip_count, user = $user_count)"
wc_stop

echo "e2e-caddy: $checks passed, 0 failed"
