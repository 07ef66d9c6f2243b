#!/usr/bin/env bash
# End-to-end test of the Traefik plugin in a real Traefik v3.6.12 (built from
# the Go module proxy's source and cached under $WINDOWLIMIT_CACHE): local
# plugin, file provider, a loopback backend. Limit 20 per minute: 22
# requests give 20 x 200 then 429 with Retry-After and the rate-limit
# headers, across a reload of the dynamic configuration made midway.
# Then the Redis part: two Traefik instances on one throwaway redis-server
# share one limit of 20 per minute: 11 requests to each, alternating, give
# exactly 20 x 200 in total, then 429.
set -euo pipefail
source "$(dirname "$0")/traefik-lib.sh"
trap wl_cleanup EXIT

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
redis-server --port "$REDIS" --bind 127.0.0.1 --save '' --appendonly no --dir "$WL_WORK" \
	>"$WL_WORK/redis.log" 2>&1 &
WL_PIDS+=($!)
for ((i = 0; i < 50; i++)); do
	[[ $(redis-cli -p "$REDIS" ping 2>/dev/null) == PONG ]] && break
	sleep 0.1
done
[[ $(redis-cli -p "$REDIS" ping 2>/dev/null) == PONG ]] || wl_die "redis-server did not start"

MAIN_WORK=$WL_WORK
# instance NAME WEB PING starts a Traefik in $MAIN_WORK/NAME whose
# middleware keeps its counts in the redis-server.
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
