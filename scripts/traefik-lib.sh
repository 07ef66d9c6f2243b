# Shared by e2e-traefik.sh and bench-traefik.sh (sourced, not run): builds or
# reuses Traefik v3.6.12 and the loopback backend, lays out the local plugin
# and starts Traefik with the file provider. Callers set -euo pipefail and
# call wl_cleanup from an EXIT trap.

WL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WL_CACHE=${WINDOWLIMIT_CACHE:-$HOME/.cache/windowlimit}
WL_TRAEFIK_VERSION=v3.6.12
WL_MODULE=github.com/windowlimit/windowlimit
WL_PIDS=()
WL_WORK=

wl_log() { printf '%s\n' "$*" >&2; }
wl_die() { wl_log "FAIL: $*"; exit 1; }

# wl_need installs the Debian packages of the missing commands ("cmd:pkg").
wl_need() {
	local missing=() spec
	for spec in "$@"; do
		command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}")
	done
	((${#missing[@]} == 0)) && return 0
	wl_log "installing ${missing[*]}"
	apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# wl_traefik prints the path of the Traefik binary, building it from the Go
# module proxy's source when it is not cached (about 6 minutes on 2 cores).
wl_traefik() {
	local bin="$WL_CACHE/traefik-$WL_TRAEFIK_VERSION"
	mkdir -p "$WL_CACHE"
	(
		flock 9
		[[ -x $bin ]] && exit 0
		wl_log "building Traefik $WL_TRAEFIK_VERSION into $bin (log: $WL_CACHE/traefik-build.log)"
		local tmp dir
		tmp=$(mktemp -d)
		trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
		dir=$(cd "$tmp" && GO111MODULE=on GOFLAGS=-mod=mod go mod download -json "github.com/traefik/traefik/v3@$WL_TRAEFIK_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		[[ -d $dir ]] || wl_die "go mod download of traefik $WL_TRAEFIK_VERSION gave no directory"
		# The module cache is read-only; build from a writable copy.
		cp -r "$dir" "$tmp/src"
		chmod -R u+w "$tmp/src"
		(cd "$tmp/src" && go build -o "$bin.tmp" \
			-ldflags "-X github.com/traefik/traefik/v3/pkg/version.Version=$WL_TRAEFIK_VERSION" \
			./cmd/traefik) >"$WL_CACHE/traefik-build.log" 2>&1 || wl_die "traefik build failed, see $WL_CACHE/traefik-build.log"
		mv "$bin.tmp" "$bin"
	) 9>"$WL_CACHE/traefik-build.lock"
	echo "$bin"
}

# wl_backend_bin prints the path of the backend binary, built from
# scripts/e2e/backend.go when it changed.
wl_backend_bin() {
	local src="$WL_ROOT/scripts/e2e/backend.go" bin="$WL_CACHE/wl-backend"
	if [[ ! -x $bin || $src -nt $bin ]]; then
		go build -o "$bin" "$src"
	fi
	echo "$bin"
}

# wl_free_ports N prints N free loopback ports.
wl_free_ports() { "$(wl_backend_bin)" -free-ports "$1"; }

# wl_setup makes the work directory: Traefik runs in it, with the plugin
# copied to plugins-local/src/<module>, as experimental.localPlugins wants.
wl_setup() {
	WL_WORK=$(mktemp -d "${TMPDIR:-/tmp}/wl-traefik.XXXXXX")
	local dst="$WL_WORK/plugins-local/src/$WL_MODULE"
	mkdir -p "$dst"
	cp -r "$WL_ROOT/go.mod" "$WL_ROOT/.traefik.yml" "$WL_ROOT/shared" "$WL_ROOT/traefikplugin" "$dst/"
	find "$dst" -name '*_test.go' -delete
}

# wl_start_backend starts the backend and sets WL_BACKEND_PORT.
wl_start_backend() {
	local bin
	bin=$(wl_backend_bin)
	"$bin" -port-file "$WL_WORK/backend.port" 2>"$WL_WORK/backend.log" &
	WL_PIDS+=($!)
	local i
	for ((i = 0; i < 100; i++)); do
		[[ -s $WL_WORK/backend.port ]] && break
		sleep 0.1
	done
	[[ -s $WL_WORK/backend.port ]] || wl_die "backend did not start"
	WL_BACKEND_PORT=$(cat "$WL_WORK/backend.port")
}

# wl_start_traefik WEB_PORT PING_PORT starts Traefik on loopback with the
# local plugin and the file provider watching $WL_WORK/dynamic.yml, and
# waits until it answers its ping.
wl_start_traefik() {
	local web=$1 ping=$2 traefik
	traefik=$(wl_traefik)
	cat >"$WL_WORK/traefik.yml" <<-YAML
		global:
		  checkNewVersion: false
		  sendAnonymousUsage: false
		log:
		  level: ${WL_TRAEFIK_LOG_LEVEL:-INFO}
		entryPoints:
		  web:
		    address: "127.0.0.1:$web"
		  ping:
		    address: "127.0.0.1:$ping"
		ping:
		  entryPoint: ping
		providers:
		  file:
		    filename: $WL_WORK/dynamic.yml
		    watch: true
		experimental:
		  localPlugins:
		    windowlimit:
		      moduleName: $WL_MODULE
	YAML
	# WL_TRAEFIK_EXTRA_PLUGINS: more local plugins, "name:module" separated by spaces.
	local extra
	for extra in ${WL_TRAEFIK_EXTRA_PLUGINS:-}; do
		printf '    %s:\n      moduleName: %s\n' "${extra%%:*}" "${extra#*:}" >>"$WL_WORK/traefik.yml"
	done
	(cd "$WL_WORK" && exec "$traefik" --configFile="$WL_WORK/traefik.yml" >"$WL_WORK/traefik.log" 2>&1) &
	WL_PIDS+=($!)
	WL_TRAEFIK_PID=$!
	local i
	for ((i = 0; i < 300; i++)); do
		kill -0 "$WL_TRAEFIK_PID" 2>/dev/null || { cat "$WL_WORK/traefik.log" >&2; wl_die "traefik exited"; }
		[[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$ping/ping") == 200 ]] && return 0
		sleep 0.1
	done
	cat "$WL_WORK/traefik.log" >&2
	wl_die "traefik did not answer its ping within 30 s"
}

# wl_wait_status URL STATUS waits, at most 15 s, until URL answers STATUS.
wl_wait_status() {
	local i
	for ((i = 0; i < 150; i++)); do
		[[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$1") == "$2" ]] && return 0
		sleep 0.1
	done
	return 1
}

wl_cleanup() {
	local pid
	for pid in "${WL_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${WL_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	if [[ -n $WL_WORK && -z ${WL_KEEP_WORK:-} ]]; then
		rm -rf "$WL_WORK"
	fi
}
