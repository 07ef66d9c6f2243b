#!/usr/bin/env bash
# End-to-end test of the Traefik plugin in a real Traefik v3.6.12 (built from
# the Go module proxy's source and cached under $WINDOWLIMIT_CACHE): local
# plugin, file provider, a loopback backend. Limit 20 per minute: 22
# requests give 20 x 200 then 429 with Retry-After and the rate-limit
# headers, across a reload of the dynamic configuration made midway.
set -euo pipefail
source "$(dirname "$0")/traefik-lib.sh"
trap wl_cleanup EXIT

wl_need curl:curl
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
