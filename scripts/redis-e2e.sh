# The Redis checks of e2e-traefik.sh (caddymodule/e2e makes them for Caddy) (sourced after
# caddy-lib.sh or traefik-lib.sh, not run): a throwaway redis-server and
# Redis Cluster on loopback, and the checks of one limit of 20 per minute
# shared by two instances, named by their web ports. The instances route
# /chaos (keyed by X-Key, store errors allowed) and /deny (keyed by X-Key,
# store errors denied) to zones kept in the redis-server. Each check dies
# on a failure and leaves its summary in WL_SUMMARY for the caller's
# wl_pass. Callers run wl_cluster_stop before wl_cleanup in their EXIT trap.

WL_REDIS_PORT=
WL_REDIS_PID=
WL_CLUSTER_DIR=
WL_CLUSTER_NODES=()
WL_SUMMARY=

wl_now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
wl_secs() { printf '%d.%02d' $(($1 / 1000000)) $(($1 % 1000000 / 10000)); }

# wl_redis_start PORT starts the throwaway redis-server on PORT, sets
# WL_REDIS_PORT and WL_REDIS_PID and waits until it answers.
wl_redis_start() {
	local i
	WL_REDIS_PORT=$1
	redis-server --port "$WL_REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WL_WORK" \
		>>"$WL_WORK/redis.log" 2>&1 &
	WL_REDIS_PID=$!
	WL_PIDS+=("$WL_REDIS_PID")
	for ((i = 0; i < 100; i++)); do
		[[ $(redis-cli -p "$WL_REDIS_PORT" ping 2>/dev/null) == PONG ]] && return 0
		sleep 0.02
	done
	wl_die "redis-server did not start"
}

# wl_cluster_start starts a three-master Redis Cluster in $WL_WORK/cluster
# (scripts/redis-cluster.sh) and sets WL_CLUSTER_NODES to its addresses.
wl_cluster_start() {
	local addrs
	WL_CLUSTER_DIR=$WL_WORK/cluster
	addrs=$("$WL_ROOT/scripts/redis-cluster.sh" start "$WL_CLUSTER_DIR" | sed -n 's/^ADDRS //p') ||
		wl_die "scripts/redis-cluster.sh start failed"
	read -r -a WL_CLUSTER_NODES <<<"$addrs"
	((${#WL_CLUSTER_NODES[@]} == 3)) || wl_die "scripts/redis-cluster.sh printed ADDRS '$addrs'"
}

# wl_cluster_stop kills the cluster's nodes, if one was started.
wl_cluster_stop() {
	[[ -z $WL_CLUSTER_DIR ]] || "$WL_ROOT/scripts/redis-cluster.sh" stop "$WL_CLUSTER_DIR" >/dev/null 2>&1 || true
}

# wl_shared_limit WHAT PORT_A PORT_B PATH [curl args]: 22 requests
# alternating between two instances give exactly 20 x 200,
# X-RateLimit-Remaining counting 19..0 across both and X-RateLimit-Reset > 0
# (a count kept in Redis: the allow policy answers Reset 0), then 429 with
# Retry-After.
wl_shared_limit() {
	local what=$1 a=$2 b=$3 path=$4 n port name status
	shift 4
	for n in $(seq 1 22); do
		if ((n % 2)); then port=$a name=a; else port=$b name=b; fi
		status=$(wl_fetch "http://127.0.0.1:$port$path" "$@")
		if ((n <= 20)); then
			[[ $status == 200 ]] || wl_die "$what: request $n (instance $name): $status, want 200"
			[[ $(wl_header X-RateLimit-Remaining) == $((20 - n)) ]] ||
				wl_die "$what: request $n (instance $name): X-RateLimit-Remaining '$(wl_header X-RateLimit-Remaining)', want $((20 - n)): the count is not shared"
			[[ $(wl_header X-RateLimit-Reset) =~ ^[1-9][0-9]*$ ]] ||
				wl_die "$what: request $n (instance $name): X-RateLimit-Reset '$(wl_header X-RateLimit-Reset)', want > 0: not counted in Redis"
		else
			[[ $status == 429 ]] || wl_die "$what: request $n (instance $name): $status, want 429"
			[[ $(wl_header Retry-After) =~ ^[1-9][0-9]*$ ]] || wl_die "$what: request $n: Retry-After '$(wl_header Retry-After)'"
		fi
	done
}

# wl_lease_shared WHAT PORT_A PORT_B PATH KEY: PATH is a zone of window 1m,
# sub_window 10s and limit 60 with leases on (the default), keyed by the
# client address (KEY in Redis). Early in a sub-window, 100 requests, eight
# at a time, alternate between the two instances: at most 60 get 200, and
# Redis counts exactly 60 (the offered load passed the limit: whatever the
# leases hold is counted too) while fewer script calls than requests were
# made (leases spared some). Once the sub-window is over, the leases have
# given back what they did not spend: Redis counts exactly the requests
# admitted.
wl_lease_shared() {
	local what=$1 a=$2 b=$3 path=$4 key=$5 calls0 calls ok held count i
	# Start early in a sub-window (Redis's, on this machine's clock), so
	# that no lease ends, giving back, during the burst.
	for ((i = 0; i < 200 && $(wl_now_us) / 1000000 % 10 >= 5; i++)); do sleep 0.05; done
	calls0=$(wl_script_calls)
	for i in $(seq 1 100); do
		if ((i % 2)); then echo "http://127.0.0.1:$a$path"; else echo "http://127.0.0.1:$b$path"; fi
	done | timeout 60 xargs -P 8 -n 1 curl -s -o /dev/null --max-time 5 -w '%{http_code}\n' >"$WL_WORK/lease.out"
	calls=$(($(wl_script_calls) - calls0))
	held=$(wl_stored_count "$key" -p "$WL_REDIS_PORT")
	ok=$(grep -c '^200$' "$WL_WORK/lease.out" || true)
	(($(wc -l <"$WL_WORK/lease.out") == 100)) || wl_die "$what: $(wc -l <"$WL_WORK/lease.out") responses of 100"
	((ok <= 60)) || wl_die "$what: $ok x 200 of 100 at a limit of 60"
	((held == 60)) || wl_die "$what: redis counts $held after the burst, want 60 (the limit: the burst passed it)"
	((calls < 100)) || wl_die "$what: $calls script calls for 100 requests: no lease spared one"
	sleep $((10 - $(wl_now_us) / 1000000 % 10)).5
	count=$(wl_stored_count "$key" -p "$WL_REDIS_PORT")
	((count == ok)) || wl_die "$what: once the leases ended redis counts $count, want the $ok admitted: unspent units not given back"
	WL_SUMMARY="$what with leases: 100 requests alternating, 8 at a time: $ok x 200 (limit 60), $calls script calls; redis counted 60, then $count once the leases gave back what they did not spend"
}

# wl_script_calls prints how many script calls (EVALSHA and EVAL) the
# redis-server on WL_REDIS_PORT ran.
wl_script_calls() {
	redis-cli -p "$WL_REDIS_PORT" info commandstats | tr -d '\r' |
		awk -F'[=,:]' '/^cmdstat_eval(sha)?:/ {n += $3} END {print n + 0}'
}

# wl_stored_count KEY [redis-cli args] prints the sum of the sub-window
# counts of a sliding-window key: the total the string keeps after its
# 15-byte head, in w bytes. The head's shape, T*1024 + k*4 + unit, gives
# k; it is stored negated in a lean key, 15 + w(k+2) bytes long (the
# total and the k+1 cells), and as it is in a full one, 19 + w(k+3) (the
# leased units and the 4-byte life follow) (see script.lua).
wl_stored_count() {
	local key=$1
	shift
	redis-cli "$@" eval "local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local sh = struct.unpack('<i8', v)
local k = math.floor((math.abs(sh) % 1024) / 4)
local w = (#v - 19) / (k + 3)
if sh < 0 then w = (#v - 15) / (k + 2) end
return struct.unpack('<I' .. w, v, 16)" 1 "$key"
}

# wl_redis_shared PORT_A PORT_B PATH KEY: wl_shared_limit on PATH, and KEY
# is the only key of its prefix in the redis-server.
wl_redis_shared() {
	local key=$4 keys
	wl_shared_limit "redis" "$1" "$2" "$3"
	keys=$(redis-cli -p "$WL_REDIS_PORT" --scan --pattern "${key%%:*}:*")
	[[ $keys == "$key" ]] || wl_die "keys in redis: '$keys', want $key"
	WL_SUMMARY="two instances through redis: 20 x 200 of 22 alternating, then 429; key $keys"
}

# wl_count_status WHAT PORT_A PORT_B PATH: PATH is a zone with limit 5 and
# count_status 401 in front of an upstream that answers the status named
# by the request's X-Status header. Requests alternate between the two
# instances (give one port twice for one instance): 6 x 200 count nothing,
# then 5 x 401 count one each (X-RateLimit-Remaining 4..0: the budget the
# check saw, shared), then a request the upstream would answer 200 gets 429
# with Retry-After, without reaching it, as does the next one (our 429s
# count nothing, so a 200 never comes back within the window).
wl_count_status() {
	local what=$1 a=$2 b=$3 path=$4 n port status
	for n in $(seq 1 13); do
		if ((n % 2)); then port=$a; else port=$b; fi
		if ((n <= 6)); then
			status=$(wl_fetch "http://127.0.0.1:$port$path" -H 'X-Status: 200')
			[[ $status == 200 ]] || wl_die "$what: request $n (a 200): $status, want 200"
		elif ((n <= 11)); then
			status=$(wl_fetch "http://127.0.0.1:$port$path" -H 'X-Status: 401')
			[[ $status == 401 ]] || wl_die "$what: failed login $((n - 6)): $status, want 401"
			[[ $(wl_header X-RateLimit-Remaining) == $((11 - n)) ]] ||
				wl_die "$what: failed login $((n - 6)): X-RateLimit-Remaining '$(wl_header X-RateLimit-Remaining)', want $((11 - n))"
		else
			status=$(wl_fetch "http://127.0.0.1:$port$path" -H 'X-Status: 200')
			[[ $status == 429 ]] || wl_die "$what: request $n after 5 failures: $status, want 429"
			[[ $(wl_header Retry-After) =~ ^[1-9][0-9]*$ ]] || wl_die "$what: request $n: Retry-After '$(wl_header Retry-After)'"
		fi
	done
	WL_SUMMARY="$what: count_status 401, limit 5: 6 x 200 uncounted, 5 x 401, then 429 twice (alternating instances)"
}

# wl_overrides WHAT PORT_A PORT_B PATH INTERNAL: PATH is a zone keyed by
# the X-API-Key header, limit 2 for most keys, with the overrides gold-key
# 600 and 10.0.0.0/8 unlimited; INTERNAL is a zone keyed by X-API-Key,
# limit 2, with the override 127.0.0.0/8 unlimited. A CIDR override
# matches the client's own address, never the key. Requests come from
# 127.0.0.1 and alternate between the two instances (give one port twice
# for one instance): gold-key gets 6 x 200 with X-RateLimit-Limit 600 and
# X-RateLimit-Remaining 599..594 (one count across instances); the key
# 10.1.2.3, an address inside the exempt CIDR sent by a client outside
# it, and plain-key each get 2 x 200 with X-RateLimit-Limit 2, then 429
# with Retry-After; on INTERNAL, which holds the client's address,
# plain-key gets 6 x 200 without any rate-limit header.
wl_overrides() {
	local what=$1 a=$2 b=$3 path=$4 internal=$5 n port status key
	for n in $(seq 1 6); do
		if ((n % 2)); then port=$a; else port=$b; fi
		status=$(wl_fetch "http://127.0.0.1:$port$path" -H 'X-API-Key: gold-key')
		[[ $status == 200 && $(wl_header X-RateLimit-Limit) == 600 && $(wl_header X-RateLimit-Remaining) == $((600 - n)) ]] ||
			wl_die "$what: gold-key request $n: $status, limit '$(wl_header X-RateLimit-Limit)', remaining '$(wl_header X-RateLimit-Remaining)', want 200, 600, $((600 - n))"
		status=$(wl_fetch "http://127.0.0.1:$port$internal" -H 'X-API-Key: plain-key')
		[[ $status == 200 && -z $(wl_header X-RateLimit-Limit) && -z $(wl_header RateLimit-Policy) ]] ||
			wl_die "$what: client 127.0.0.1 in the exempt 127.0.0.0/8, request $n: $status, limit '$(wl_header X-RateLimit-Limit)', want 200 without headers"
	done
	for key in 10.1.2.3 plain-key; do
		for n in 1 2 3; do
			if ((n % 2)); then port=$a; else port=$b; fi
			status=$(wl_fetch "http://127.0.0.1:$port$path" -H "X-API-Key: $key")
			[[ $(wl_header X-RateLimit-Limit) == 2 ]] || wl_die "$what: $key request $n: X-RateLimit-Limit '$(wl_header X-RateLimit-Limit)', want 2"
			if ((n <= 2)); then
				[[ $status == 200 ]] || wl_die "$what: $key request $n: $status, want 200"
			else
				[[ $status == 429 && $(wl_header Retry-After) =~ ^[1-9][0-9]*$ ]] ||
					wl_die "$what: $key request $n: $status, Retry-After '$(wl_header Retry-After)', want 429"
			fi
		done
	done
	WL_SUMMARY="$what: overrides: gold-key 6 x 200 under 600 (599..594); client 127.0.0.1 exempt by 127.0.0.0/8 (6 x 200, no headers); the key 10.1.2.3 from 127.0.0.1 not exempt by 10.0.0.0/8 and plain-key: 2 x 200 then 429 (alternating instances)"
}

# wl_redis_kill_under_load PORT: the redis-server is killed (kill -9) while
# 300 requests, 8 at a time, each on its own key (so none is over the
# limit), run against /chaos of the instance on PORT: every response is 200
# (some counted in Redis, the rest answered by the allow policy: their
# number is left in WL_LOAD_POLICY), none is a 5xx; /deny answers 200
# before and 429 with Retry-After: 1 meanwhile.
wl_redis_kill_under_load() {
	local port=$1 status load_pid at_kill i total ok fives counted policy statuses
	status=$(wl_fetch "http://127.0.0.1:$port/deny" -H 'X-Key: deny-up')
	[[ $status == 200 ]] || wl_die "deny zone, redis up: $status, want 200"
	# One line "status reset" a response. Redis is killed after the 50th.
	: >"$WL_WORK/load.out"
	seq 1 300 | timeout 60 xargs -P 8 -I{} curl -s -o /dev/null --max-time 5 -H 'X-Key: load-{}' \
		-w '%{http_code} %header{x-ratelimit-reset}\n' "http://127.0.0.1:$port/chaos" >>"$WL_WORK/load.out" 2>/dev/null &
	load_pid=$!
	WL_PIDS+=("$load_pid")
	for ((i = 0; i < 1000; i++)); do
		(($(wc -l <"$WL_WORK/load.out") >= 50)) && break
		kill -0 "$load_pid" 2>/dev/null || break
		sleep 0.01
	done
	at_kill=$(wc -l <"$WL_WORK/load.out")
	kill -9 "$WL_REDIS_PID"
	wait "$WL_REDIS_PID" 2>/dev/null || true
	wl_forget "$WL_REDIS_PID"
	wait "$load_pid" || true
	wl_forget "$load_pid"
	read -r total ok fives counted policy < <(awk '{t++} $1 == 200 {o++} $1 ~ /^5/ {f++}
		$1 == 200 && $2 > 0 {c++} $1 == 200 && $2 == "0" {p++} END {print t + 0, o + 0, f + 0, c + 0, p + 0}' "$WL_WORK/load.out")
	statuses=$(awk '{print $1}' "$WL_WORK/load.out" | sort | uniq -c | awk '{printf "%s x %s, ", $1, $2}')
	((total == 300)) || wl_die "load: $total responses of 300 (${statuses%, })"
	((fives == 0)) || wl_die "load: $fives x 5xx while redis was killed (${statuses%, })"
	((ok == 300)) || wl_die "load: $ok x 200 of 300 with store errors allowed (${statuses%, })"
	((counted > 0 && policy > 0)) ||
		wl_die "load: $counted counted in redis, $policy answered by the policy (killed after $at_kill responses): the kill did not land during the load"
	status=$(wl_fetch "http://127.0.0.1:$port/deny" -H 'X-Key: deny-down')
	[[ $status == 429 && $(wl_header Retry-After) == 1 ]] ||
		wl_die "deny zone, redis down: $status Retry-After '$(wl_header Retry-After)', want 429 with Retry-After 1"
	WL_LOAD_POLICY=$policy
	WL_SUMMARY="redis killed under load (after $at_kill responses): $ok x 200 of $total ($counted counted in redis, $policy by the allow policy), $fives x 5xx; deny zone meanwhile: 429 Retry-After 1"
}

# wl_redis_restart PORT_A PORT_B MAX_SECONDS KEY restarts the redis-server
# on its port. Polling, with a fresh key each time, a request to instance a
# then one to b: b answers Remaining 18 only when both requests were counted
# in one shared store, which can only be Redis (an instance answering from
# the allow policy says Remaining 19, Reset 0); that must happen within
# MAX_SECONDS. Then wl_shared_limit on /chaos with X-Key: after, whose
# count, KEY, is 20 in the new Redis, and /deny answers 200 again.
wl_redis_restart() {
	local a=$1 b=$2 max=$3 key=$4 t0 up at_a= at_b= poll sa sb line rec count i
	t0=$(wl_now_us)
	wl_redis_start "$WL_REDIS_PORT"
	up=$(($(wl_now_us) - t0))
	: >"$WL_WORK/recovery.log"
	for ((poll = 1; ; poll++)); do
		sa=$(wl_fetch "http://127.0.0.1:$a/chaos" -H "X-Key: recover-$poll")
		line="a $sa Remaining $(wl_header X-RateLimit-Remaining) Reset $(wl_header X-RateLimit-Reset)"
		[[ -z $at_a && $(wl_header X-RateLimit-Reset) =~ ^[1-9] ]] && at_a=$(($(wl_now_us) - t0))
		sb=$(wl_fetch "http://127.0.0.1:$b/chaos" -H "X-Key: recover-$poll")
		echo "$(wl_secs $(($(wl_now_us) - t0))) s: poll $poll: $line; b $sb Remaining $(wl_header X-RateLimit-Remaining) Reset $(wl_header X-RateLimit-Reset)" >>"$WL_WORK/recovery.log"
		[[ -z $at_b && $(wl_header X-RateLimit-Reset) =~ ^[1-9] ]] && at_b=$(($(wl_now_us) - t0))
		[[ $sa == 200 && $sb == 200 ]] || { cat "$WL_WORK/recovery.log" >&2; wl_die "recovery poll $poll: instance a $sa, instance b $sb, want 200"; }
		[[ $(wl_header X-RateLimit-Remaining) == 18 ]] && break
		(($(wl_now_us) - t0 < 5000000)) || { cat "$WL_WORK/recovery.log" >&2; wl_die "the two instances did not share a count within 5 s of the restart"; }
	done
	rec=$(($(wl_now_us) - t0))
	((rec <= max * 1000000)) || { cat "$WL_WORK/recovery.log" >&2; wl_die "the shared limit came back $(wl_secs "$rec") s after the restart, want <= $max s"; }
	wl_shared_limit "after the restart" "$a" "$b" /chaos -H 'X-Key: after'
	count=$(wl_stored_count "$key" -p "$WL_REDIS_PORT")
	((count == 20)) || wl_die "$key holds $count in redis, want 20"
	for ((i = 1; ; i++)); do
		[[ $(wl_fetch "http://127.0.0.1:$a/deny" -H "X-Key: deny-after-$i") == 200 ]] && break
		((i < 100)) || wl_die "the deny zone still refuses 2 s after the restart"
		sleep 0.02
	done
	WL_SUMMARY="redis restarted: recovered in $(wl_secs "$rec") s (one count shared by both instances at poll $poll; redis up after $(wl_secs "$up") s, instance a counting in it after $(wl_secs "$at_a") s, b after $(wl_secs "$at_b") s); then 20 x 200 alternating on a fresh key, 429, and $key = 20 in redis"
}

# wl_cluster_shared PORT_A PORT_B PATH IP_KEY USER_KEY USER_MAX: PATH limits
# by client address (IP_KEY) and by X-User (USER_KEY, here alice) in the
# cluster: wl_shared_limit, then these two keys, and no other of their
# prefix, are in the cluster, IP_KEY holds 20 and USER_KEY 20..USER_MAX.
wl_cluster_shared() {
	local a=$1 b=$2 path=$3 ip_key=$4 user_key=$5 user_max=$6 found= node key ip_count user_count
	wl_shared_limit "cluster" "$a" "$b" "$path" -H 'X-User: alice'
	for node in "${WL_CLUSTER_NODES[@]}"; do
		for key in $(redis-cli -p "${node##*:}" --scan --pattern "${ip_key%%:*}:*"); do
			found+="$key@$node "
		done
	done
	[[ $found == *"$ip_key@"* && $found == *"$user_key@"* && $(wc -w <<<"$found") == 2 ]] ||
		wl_die "keys in the cluster: '$found', want $ip_key and $user_key"
	ip_count=$(wl_stored_count "$ip_key" -c -p "${WL_CLUSTER_NODES[0]##*:}")
	user_count=$(wl_stored_count "$user_key" -c -p "${WL_CLUSTER_NODES[0]##*:}")
	((ip_count == 20)) || wl_die "$ip_key holds $ip_count, want 20"
	((user_count >= 20 && user_count <= user_max)) || wl_die "$user_key holds $user_count, want 20$( ((user_max == 20)) || echo "..$user_max")"
	WL_SUMMARY="two instances on a 3-master redis cluster: 20 x 200 of 22 alternating, then 429; keys ${found% } ($ip_key = $ip_count, $user_key = $user_count)"
}
