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
#     20 x 200 in total, then 429.
set -euo pipefail
source "$(dirname "$0")/caddy-lib.sh"
trap wc_cleanup EXIT

wc_need curl:curl ss:iproute2 redis-server:redis-server redis-cli:redis-tools
wc_setup
read -r WEB ADMIN EX_WEB EX_ADMIN REDIS WEB_A ADMIN_A WEB_B ADMIN_B < <(wc_free_ports 9 | paste -sd' ')
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
redis-server --port "$REDIS" --bind 127.0.0.1 --save '' --appendonly no --dir "$WC_WORK" \
	>"$WC_WORK/redis.log" 2>&1 &
WC_PIDS+=($!)
for n in $(seq 50); do
	[[ $(redis-cli -p "$REDIS" ping 2>/dev/null) == PONG ]] && break
	sleep 0.1
done
[[ $(redis-cli -p "$REDIS" ping 2>/dev/null) == PONG ]] || wc_die "redis-server did not start"
# instance WEB ADMIN writes the Caddyfile of one instance and starts it.
instance() {
	cat >"$WC_WORK/Caddyfile.$1" <<-EOF
		{
			admin 127.0.0.1:$2
			persist_config off
		}
		:$1 {
			bind 127.0.0.1
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
wc_stop

echo "e2e-caddy: $checks passed, 0 failed"
