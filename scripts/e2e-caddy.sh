#!/usr/bin/env bash
# End-to-end test of the Caddy module in a real Caddy binary built by
# ./xcaddy.sh, driven over HTTP on loopback ports. The parts that need one
# instance at a time are Go tests in caddymodule/e2e (go test -count=1
# ./caddymodule/e2e; scripts/test.sh runs both): 1 and 2 (TestE2EReload),
# 7 (TestE2EAdminAPI), 8 (TestE2EOverridesAndTiers), 9
# (TestE2ECountStatusAttacks), 10 (TestE2ETrustedProxy), 11 (TestE2EReset),
# 12 (TestE2EPersist), and Caddyfile.example's lines (TestE2EExample).
# Here:
#
#  3. `./xcaddy.sh version` says it reused the binary just built (no
#     3 to 5 minute announcement) before Caddy's version;
#     `caddy validate` and `caddy adapt` accept Caddyfile.example, and the
#     example, run on a free port, answers the curl lines of README.md's
#     Caddy quickstart with the "# ..." line under each (retry_after_seconds
#     from 1 to the zone's window plus one sub-window); TestE2EExample
#     checks the example's own comments;
#  4. two Caddy instances share one limit of 20 per minute through a
#     throwaway redis-server: 11 requests to each, alternating, give exactly
#     20 x 200 in total, then 429; and a count_status 401 zone with limit 5
#     shared through Redis counts only the 401s (wl_count_status); a zone
#     keyed by X-API-Key with `override gold-key 600`,
#     `override 10.0.0.0/8 unlimited` and `limit {plan_limit}` fed by the
#     map directive (silver-key 4, broken-key oops, default 2) gives
#     gold-key 600, does not exempt the key 10.1.2.3 sent from 127.0.0.1
#     (a CIDR matches the client's address, never the key: limit 2),
#     limits silver-key to 4, plain keys to 2, and broken-key to the
#     fallback 1, logged; a zone with `override 127.0.0.0/8 unlimited`
#     exempts the test's client (no headers) (wl_overrides, tiers);
#     TestE2EOverridesAndTiers does the same in memory;
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
#
# WL_PARTS=example runs part 3 alone.
set -euo pipefail
source "$(dirname "$0")/caddy-lib.sh"
source "$(dirname "$0")/redis-e2e.sh"
trap 'wl_cluster_stop; wl_cleanup' EXIT

wl_need curl:curl ss:iproute2 redis-server:redis-server redis-cli:redis-tools jq:jq
wc_setup
read -r EX_WEB EX_ADMIN REDIS WEB_A ADMIN_A WEB_B ADMIN_B WEB_C ADMIN_C WEB_D ADMIN_D < <(wc_free_ports 11 | paste -sd' ')

# example_part is part 3: Caddyfile.example, then README's Caddy quickstart.
example_part() {
	# ./xcaddy.sh <command>, as README's quickstart runs it: the build's
	# line before the command's output. wc_build has just built the binary,
	# so it is reused, and no first build of 3 to 5 minutes is announced
	# (xcaddy, when on PATH, builds afresh every time: then the time it took).
	CADDY_OUTPUT=$WC_CADDY "$WL_ROOT/xcaddy.sh" version >"$WL_WORK/xcaddy.log" 2>&1 ||
		{ cat "$WL_WORK/xcaddy.log" >&2; wl_die "./xcaddy.sh version failed"; }
	local built='^xcaddy.sh: .* is up to date with this checkout: reused it \(checked in [0-9]+ min [0-9]+ s\)$'
	command -v xcaddy >/dev/null && built='^xcaddy.sh: (built .* in [0-9]+ min [0-9]+ s|.* reused it .*)$'
	grep -qE "$built" "$WL_WORK/xcaddy.log" && ! grep -q "3 to 5 minutes" "$WL_WORK/xcaddy.log" &&
		grep -q '^v2\.' "$WL_WORK/xcaddy.log" ||
		{ cat "$WL_WORK/xcaddy.log" >&2; wl_die "./xcaddy.sh version: want a line matching '$built' before Caddy's version, and no 3 to 5 minute announcement"; }
	wl_pass "./xcaddy.sh version: $(grep -E "$built" "$WL_WORK/xcaddy.log"); then $(grep '^v2\.' "$WL_WORK/xcaddy.log" | cut -c1-20)"
	(cd "$WL_ROOT" && "$WC_CADDY" validate --config Caddyfile.example) >"$WL_WORK/validate.log" 2>&1 ||
		{ cat "$WL_WORK/validate.log" >&2; wl_die "caddy validate rejected Caddyfile.example"; }
	wl_pass "caddy validate --config Caddyfile.example"
	(cd "$WL_ROOT" && "$WC_CADDY" adapt --config Caddyfile.example) >"$WL_WORK/example.json" 2>"$WL_WORK/adapt.log" ||
		{ cat "$WL_WORK/adapt.log" >&2; wl_die "caddy adapt rejected Caddyfile.example"; }
	grep -q '"handler":"rate_limit"' "$WL_WORK/example.json" || wl_die "the adapted example has no rate_limit handler"
	wl_pass "caddy adapt --config Caddyfile.example"

	# The example as shipped, moved to free ports.
	{
		printf '{\n\tadmin 127.0.0.1:%s\n\tpersist_config off\n}\n' "$EX_ADMIN"
		sed "s/^:8080 {/:$EX_WEB {/" "$WL_ROOT/Caddyfile.example"
	} >"$WL_WORK/Caddyfile.example"

	# README's Caddy quickstart, on the example: the api zone is 1m in
	# sub-windows of 6s, the login zone 15m in sub-windows of 90s.
	wl_readme_lines "Quickstart: Caddy" localhost:8080 >"$WL_WORK/readme-lines"
	[[ -s $WL_WORK/readme-lines ]] || wl_die "no curl lines under README's Quickstart: Caddy"
	wc_start "$WL_WORK/Caddyfile.example" "$EX_ADMIN"
	wl_readme_check "$WL_WORK/readme-lines" localhost:8080 "127.0.0.1:$EX_WEB" "$WL_WORK/caddy-$EX_ADMIN.log" api=66 login=990
	wl_stop
}

case ${WL_PARTS:-all} in
all) ;;
example)
	"${WL_PARTS}_part"
	echo "e2e-caddy: $WL_CHECKS passed, 0 failed"
	exit 0
	;;
*) wl_die "WL_PARTS '$WL_PARTS': want all or example" ;;
esac

# Part 3: Caddyfile.example.
example_part

# tiers WHAT PORT_A PORT_B ADMIN: /tiers takes its limit from the map
# directive (silver-key 4, broken-key "oops", default 2) through
# `limit {plan_limit}`, whose fallback is 1. Alternating instances,
# silver-key gets 4 x 200 with X-RateLimit-Limit 4, then 429; broken-key,
# whose tier is no number, gets the fallback: 1 x 200 with
# X-RateLimit-Limit 1, then 429, never unlimited; and the instance of
# ADMIN logged that once.
tiers() {
	local what=$1 a=$2 b=$3 admin=$4 n port status want
	for n in 1 2 3 4 5; do
		if ((n % 2)); then port=$a; else port=$b; fi
		status=$(wl_fetch "http://127.0.0.1:$port/tiers" -H 'X-API-Key: silver-key')
		want=200
		((n <= 4)) || want=429
		[[ $status == "$want" && $(wl_header X-RateLimit-Limit) == 4 ]] ||
			wl_die "$what: silver-key request $n: $status, limit '$(wl_header X-RateLimit-Limit)', want $want and 4"
	done
	for n in 1 2; do
		if ((n % 2)); then port=$a; else port=$b; fi
		status=$(wl_fetch "http://127.0.0.1:$port/tiers" -H 'X-API-Key: broken-key')
		want=200
		((n == 1)) || want=429
		[[ $status == "$want" && $(wl_header X-RateLimit-Limit) == 1 ]] ||
			wl_die "$what: broken-key request $n: $status, limit '$(wl_header X-RateLimit-Limit)', want the fallback limit 1"
	done
	grep -q 'limit placeholder holds no valid limit' "$WL_WORK/caddy-$admin.log" || wl_die "$what: no warning about the bad tier"
	WL_SUMMARY="$what: limit {plan_limit} from map: silver-key 4 x 200 then 429; broken-key (tier \"oops\") falls back to 1: 200 then 429, logged"
}

# Part 4: two instances, one limit, through Redis.
wl_redis_start "$REDIS"
# instance WEB ADMIN writes the Caddyfile of one instance and starts it:
# / is part 4's zone; /chaos and /deny are part 5's, keyed by X-Key, with
# the default on_store_error (allow) and with deny.
instance() {
	cat >"$WL_WORK/Caddyfile.$1" <<-EOF
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
						address 127.0.0.1:$WL_REDIS_PORT
						key_prefix chaos:
						lease off
					}
				}
				respond "chaos"
			}
			handle /tiers {
				map {header.X-API-Key} {plan_limit} {
					silver-key 4
					broken-key oops
					default    2
				}
				rate_limit {
					zone tiers {
						key      {http.request.header.X-API-Key}
						window   1m
						limit    {plan_limit}
						override gold-key 600
						override 10.0.0.0/8 unlimited
					}
					store redis {
						address 127.0.0.1:$WL_REDIS_PORT
						key_prefix tiers:
					}
				}
				respond "tiers"
			}
			handle /internal {
				rate_limit {
					zone internal {
						key      {http.request.header.X-API-Key}
						window   1m
						limit    2
						override 127.0.0.0/8 unlimited
					}
					store redis {
						address 127.0.0.1:$WL_REDIS_PORT
						key_prefix internal:
					}
				}
				respond "internal"
			}
			handle /login {
				rate_limit {
					zone login {
						window 15m
						limit 5
						count_status 401
					}
					store redis {
						address 127.0.0.1:$WL_REDIS_PORT
						key_prefix login:
					}
				}
				@fail header X-Status 401
				respond @fail "wrong password" 401
				respond "welcome"
			}
			handle /deny {
				rate_limit {
					zone deny {
						key {http.request.header.X-Key}
						window 1m
						limit 20
					}
					store redis {
						address 127.0.0.1:$WL_REDIS_PORT
						key_prefix deny:
					}
					on_store_error deny
				}
				respond "deny"
			}
			handle /hot {
				rate_limit {
					zone hot {
						window 1m
						sub_window 10s
						limit 60
					}
					store redis {
						address 127.0.0.1:$WL_REDIS_PORT
						key_prefix hot:
					}
				}
				respond "hot"
			}
			handle {
				rate_limit {
					zone e2e {
						window 1m
						limit 20
					}
					store redis {
						address 127.0.0.1:$WL_REDIS_PORT
						key_prefix e2e:
						lease off
					}
					on_store_error deny
				}
				respond "ok"
			}
		}
	EOF
	wc_start "$WL_WORK/Caddyfile.$1" "$2"
}
instance "$WEB_A" "$ADMIN_A"
instance "$WEB_B" "$ADMIN_B"
wl_redis_shared "$WEB_A" "$WEB_B" / 'e2e:e2e:{127.0.0.1}'
if grep -i 'redis store failed' "$WL_WORK/caddy-$ADMIN_A.log" "$WL_WORK/caddy-$ADMIN_B.log"; then
	wl_die "caddy logged redis errors"
fi
wl_pass "$WL_SUMMARY"
wl_lease_shared "two instances through redis" "$WEB_A" "$WEB_B" /hot 'hot:hot:{127.0.0.1}'
wl_pass "$WL_SUMMARY"
wl_overrides "redis" "$WEB_A" "$WEB_B" /tiers /internal
wl_pass "$WL_SUMMARY"
tiers "redis" "$WEB_A" "$WEB_B" "$ADMIN_A"
wl_pass "$WL_SUMMARY"
wl_count_status "redis" "$WEB_A" "$WEB_B" /login
[[ $(redis-cli -p "$WL_REDIS_PORT" --scan --pattern 'login:*') == 'login:login:{127.0.0.1}' ]] ||
	wl_die "count_status: keys in redis: '$(redis-cli -p "$WL_REDIS_PORT" --scan --pattern 'login:*')'"
wl_pass "$WL_SUMMARY"

# Part 5: chaos, on the same two instances.
metric() { awk -v m="$1" '$1 == m {print $2}' "$WL_WORK/metrics"; }
wl_redis_kill_under_load "$WEB_A"
curl -s --max-time 5 "http://127.0.0.1:$ADMIN_A/metrics" >"$WL_WORK/metrics"
fallbacks=$(metric caddy_http_rate_limit_store_fallbacks_total)
open=$(metric caddy_http_rate_limit_store_breakers_open)
[[ $fallbacks =~ ^[0-9]+$ ]] && ((fallbacks >= WL_LOAD_POLICY + 1)) ||
	wl_die "metrics: store_fallbacks_total '$fallbacks', want >= $((WL_LOAD_POLICY + 1))"
[[ $open =~ ^[0-9]+$ ]] && ((open >= 1)) || wl_die "metrics: store_breakers_open '$open' while redis is down, want >= 1"
wl_pass "$WL_SUMMARY; metrics: $fallbacks fallbacks, $open breakers open"

# The breaker probes every 250 ms through a fresh go-redis client, which
# takes over once it gets an answer: the loaded instance's pool, which
# failed pool_size dials during the outage and would only redial once a
# second, does not hold the recovery back.
wl_redis_restart "$WEB_A" "$WEB_B" 1 'chaos:chaos:{after}'
grep -q 'redis store failed' "$WL_WORK/caddy-$ADMIN_A.log" || wl_die "instance a logged no redis error"
grep -q 'redis store answers again' "$WL_WORK/caddy-$ADMIN_A.log" || wl_die "instance a logged no recovery"
wl_pass "$WL_SUMMARY"
wl_stop

# Part 6: two instances on a Redis Cluster, two zones on different keys
# (the client IP and X-User), so in different slots.
wl_cluster_start
cluster_instance() {
	cat >"$WL_WORK/Caddyfile.$1" <<-EOF
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
					addresses ${WL_CLUSTER_NODES[*]}
					key_prefix cl:
				}
				on_store_error deny
			}
			respond "ok"
		}
	EOF
	wc_start "$WL_WORK/Caddyfile.$1" "$2"
}
cluster_instance "$WEB_C" "$ADMIN_C"
cluster_instance "$WEB_D" "$ADMIN_D"
wl_cluster_shared "$WEB_C" "$WEB_D" / 'cl:ip:{127.0.0.1}' 'cl:user:{alice}' 22
if grep -i 'redis store failed' "$WL_WORK/caddy-$ADMIN_C.log" "$WL_WORK/caddy-$ADMIN_D.log"; then
	wl_die "caddy logged redis errors on the cluster"
fi
wl_pass "$WL_SUMMARY"
wl_stop

echo "e2e-caddy: $WL_CHECKS passed, 0 failed"
