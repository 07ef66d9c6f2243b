#!/usr/bin/env bash
# Runs Traefik v3 with this checkout's windowlimit plugin, the Traefik twin
# of `./xcaddy.sh run --config Caddyfile.example`:
#
#   scripts/traefik-quickstart.sh
#
# serves docs/examples/traefik/dynamic.yml (an API limit of 10 per minute per
# API key, per client address without one; 5 failed logins per 15 minutes)
# on http://localhost:8081, in front of a small backend
# (scripts/e2e/backend) on 127.0.0.1:8082, until Ctrl-C, which stops both.
#
# Traefik: the `traefik` on PATH if it is v3, or built from source (whose
# version says "dev"); else v3.6.12 built once from the Go module proxy's
# source (6 to 15 minutes on 2 cores, with a progress line every 30 s) and
# cached under ${WINDOWLIMIT_CACHE:-~/.cache/windowlimit}. The first run
# also compiles the backend (up to a minute on a cold Go build cache, with
# the same progress lines). Needs Go (the go.mod's version) for both.
#
# It runs Traefik in a temporary directory holding copies of
# docs/examples/traefik/traefik.yml and dynamic.yml (with the ports below) and
# plugins-local/src/github.com/windowlimit/windowlimit, a symlink to this
# checkout: Traefik reads a local plugin from there when it starts, so a
# restart picks up your edits.
#
# Environment: WL_QUICKSTART_PORT (default 8081) and
# WL_QUICKSTART_BACKEND_PORT (default 8082), both on 127.0.0.1.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/traefik.sh"

port=${WL_QUICKSTART_PORT:-8081}
backend_port=${WL_QUICKSTART_BACKEND_PORT:-8082}
examples=$WL_ROOT/docs/examples/traefik

say() { printf 'traefik-quickstart: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}

# in_use PORT reports whether something listens on 127.0.0.1:PORT.
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# find_traefik prints the Traefik to run, and says in one line which and
# why: the traefik on PATH if it is v3, or if it says "dev", as one built
# from source without a version does (docs/traefik.md's way); else Traefik
# $WT_VERSION, built here once. A "dev" that cannot run the plugin says so
# in its log.
find_traefik() {
	local t v why
	if t=$(command -v traefik); then
		v=$("$t" version 2>/dev/null | awk '$1 == "Version:" {print $2}') || true
		if [[ $v =~ ^v?3\. ]]; then
			say "using $t (Traefik $v, on PATH)"
			echo "$t"
			return
		fi
		if [[ $v == dev ]]; then
			say "using $t (on PATH, Traefik built from source: its version says 'dev', taken to be v3, which the plugin needs; if it is not, its log below says the plugin failed)"
			echo "$t"
			return
		fi
		why="$t is Traefik ${v:-of unknown version}, and the plugin needs v3"
	else
		why="no traefik on PATH"
	fi
	if [[ -x $WL_CACHE/traefik-$WT_VERSION ]]; then
		say "using Traefik $WT_VERSION, built here earlier: $WL_CACHE/traefik-$WT_VERSION ($why)"
	else
		say "using Traefik $WT_VERSION, built below from the Go module proxy's source, once ($why; a Traefik v3 on PATH skips the build, see docs/traefik.md)"
	fi
	wt_traefik
}

[[ $port =~ ^[0-9]+$ && $backend_port =~ ^[0-9]+$ ]] || die "WL_QUICKSTART_PORT and WL_QUICKSTART_BACKEND_PORT must be port numbers"
command -v go >/dev/null || die "go is not on PATH: install Go $(sed -n 's/^go //p' "$WL_ROOT/go.mod") or later (https://go.dev/dl/)"
command -v curl >/dev/null || die "curl is not on PATH"
in_use "$port" && die "127.0.0.1:$port is in use: set WL_QUICKSTART_PORT to another port"
in_use "$backend_port" && die "127.0.0.1:$backend_port is in use: set WL_QUICKSTART_BACKEND_PORT to another port"

traefik=$(find_traefik)

trap 'exit 130' INT
trap 'exit 143' TERM
trap wl_cleanup EXIT
WL_WORK=$(mktemp -d "${TMPDIR:-/tmp}/wl-quickstart.XXXXXX")
mkdir -p "$WL_WORK/plugins-local/src/github.com/windowlimit"
ln -s "$WL_ROOT" "$WL_WORK/plugins-local/src/$WT_MODULE"
sed "s/127\.0\.0\.1:8081/127.0.0.1:$port/" "$examples/traefik.yml" >"$WL_WORK/traefik.yml"
sed "s#http://127\.0\.0\.1:8082#http://127.0.0.1:$backend_port#" "$examples/dynamic.yml" >"$WL_WORK/dynamic.yml"
grep -q "address: \"127.0.0.1:$port\"" "$WL_WORK/traefik.yml" || die "docs/examples/traefik/traefik.yml has no address 127.0.0.1:8081 to set the port in"
grep -q "url: http://127.0.0.1:$backend_port" "$WL_WORK/dynamic.yml" || die "docs/examples/traefik/dynamic.yml has no url http://127.0.0.1:8082 to set the backend port in"

backend=$(wl_backend_bin)
"$backend" -listen "127.0.0.1:$backend_port" 2>"$WL_WORK/backend.log" &
WL_PIDS+=($!)
backend_pid=$!

(cd "$WL_WORK" && exec "$traefik" --configFile=traefik.yml) &
WL_PIDS+=($!)
traefik_pid=$!

# Ready when the unlimited router answers: the routers and the plugin load
# together, and the check costs no request of a limit.
say "starting Traefik in $WL_WORK (the plugin loads in a few seconds)"
for ((i = 0; ; i++)); do
	kill -0 "$backend_pid" 2>/dev/null || { cat "$WL_WORK/backend.log" >&2; die "the backend exited"; }
	kill -0 "$traefik_pid" 2>/dev/null || die "traefik exited (its log is above)"
	[[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port/") == 200 ]] && break
	((i < 600)) || die "Traefik did not answer on 127.0.0.1:$port within 60 s (its log is above)"
	sleep 0.1
done

cat >&2 <<EOF
traefik-quickstart: ready: Traefik serves docs/examples/traefik/dynamic.yml on http://localhost:$port
traefik-quickstart: (backend on 127.0.0.1:$backend_port; Ctrl-C stops both). From another shell:

  for i in \$(seq 12); do curl -s -o /dev/null -w '%{http_code} ' localhost:$port/api/items; done; echo
  curl -s localhost:$port/api/items
  curl -s -H 'X-API-Key: team-a' localhost:$port/api/items
  for i in \$(seq 7); do curl -s -o /dev/null -w '%{http_code} ' -X POST localhost:$port/login; done; echo
  curl -s -X POST -H 'X-Password: open-sesame' localhost:$port/login
  curl -si localhost:$port/api/items     # the rate-limit headers and Retry-After

EOF

# Until Traefik exits or Ctrl-C; the EXIT trap stops both processes.
wait "$traefik_pid"
