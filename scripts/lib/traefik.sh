# Traefik helpers of the bench scripts and traefik-quickstart.sh (sourced, not run),
# on top of lib/common.sh: builds or reuses Traefik v3.6.12 and the loopback
# backend, lays out the local plugin, writes the file provider's
# configuration and starts Traefik. Callers set -euo pipefail and call
# wl_cleanup from an EXIT trap.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
WT_VERSION=v3.6.12
WT_MODULE=github.com/windowlimit/windowlimit
WT_BACKEND_PORT=
WT_TRAEFIK_PID=

# wt_traefik prints the path of the Traefik binary, building it from the Go
# module proxy's source when it is not cached (6 to 15 minutes on 2 cores),
# with a progress line every 30 s. (`go install
# github.com/traefik/traefik/v3/cmd/traefik@...` refuses: Traefik's go.mod
# has replace directives, which hold only when building inside the module.)
wt_traefik() {
	local bin="$WL_CACHE/traefik-$WT_VERSION"
	mkdir -p "$WL_CACHE"
	(
		flock 9
		[[ -x $bin ]] && exit 0
		SECONDS=0
		wl_log "building Traefik $WT_VERSION into $bin, once: 6 to 15 minutes on 2 cores (log: $WL_CACHE/traefik-build.log)"
		local tmp dir log=$WL_CACHE/traefik-build.log
		tmp=$(mktemp -d)
		trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
		# wl_progress's lines go to stderr; each step's output to the log.
		# shellcheck disable=SC2317 # run through wl_progress
		download() {
			cd "$tmp" && GO111MODULE=on GOFLAGS=-mod=mod \
				go mod download -json "github.com/traefik/traefik/v3@$WT_VERSION" >"$tmp/download.json" 2>"$log"
		}
		# shellcheck disable=SC2317 # run through wl_progress
		compile() {
			cd "$tmp/src" && go build -o "$bin.tmp" \
				-ldflags "-X github.com/traefik/traefik/v3/pkg/version.Version=$WT_VERSION" \
				./cmd/traefik >"$log" 2>&1
		}
		wl_log "traefik build: downloading github.com/traefik/traefik/v3@$WT_VERSION from the Go module proxy"
		wl_progress "traefik build: download" download || { cat "$log" >&2; wl_die "go mod download of traefik $WT_VERSION failed"; }
		dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "$tmp/download.json")
		[[ -d $dir ]] || wl_die "go mod download of traefik $WT_VERSION gave no directory"
		# The module cache is read-only; build from a writable copy.
		cp -r "$dir" "$tmp/src"
		chmod -R u+w "$tmp/src"
		wl_log "traefik build: downloading its dependencies and compiling (the long part)"
		wl_progress "traefik build: compile" compile || wl_die "traefik build failed, see $log"
		mv "$bin.tmp" "$bin"
		wl_log "traefik build: done, $bin, in $((SECONDS / 60)) min $((SECONDS % 60)) s"
	) 9>"$WL_CACHE/traefik-build.lock"
	echo "$bin"
}

# wt_free_ports N prints N free loopback ports.
wt_free_ports() { "$(wl_backend_bin)" -free-ports "$1"; }

# wt_setup makes the work directory, with the plugin copied to
# plugins-local/src/<module>, as experimental.localPlugins wants.
wt_setup() {
	WL_WORK=$(mktemp -d "${TMPDIR:-/tmp}/wl-traefik.XXXXXX")
	local dst="$WL_WORK/plugins-local/src/$WT_MODULE"
	mkdir -p "$dst"
	cp -r "$WL_ROOT/go.mod" "$WL_ROOT/.traefik.yml" "$WL_ROOT/shared" "$WL_ROOT/traefikplugin" "$dst/"
	find "$dst" -name '*_test.go' -delete
}

# wt_start_backend starts the backend (wl_start_backend) and sets
# WT_BACKEND_PORT.
wt_start_backend() {
	wl_start_backend
	WT_BACKEND_PORT=$WL_BACKEND_PORT
}

# wt_router NAME PATH [MIDDLEWARE...] prints a router of dynamic.yml: PATH
# on the web entry point to the backend, through the middlewares.
wt_router() {
	local name=$1 path=$2 mw
	shift 2
	printf '    %s:\n      rule: PathPrefix(`%s`)\n      entryPoints: [web]\n      service: backend\n' "$name" "$path"
	if (($#)); then
		mw=$(printf '%s, ' "$@")
		printf '      middlewares: [%s]\n' "${mw%, }"
	fi
}

# wt_plugin NAME SETTING... prints a windowlimit middleware of dynamic.yml;
# each SETTING is one "key: value" line of its configuration.
wt_plugin() {
	printf '    %s:\n      plugin:\n        windowlimit:\n' "$1"
	shift
	printf '          %s\n' "$@"
}

# wt_dynamic FILE ROUTERS MIDDLEWARES writes the file provider's
# configuration (atomically: Traefik watches it) with the backend service.
wt_dynamic() {
	cat >"$1.tmp" <<-YAML
		http:
		  routers:
		$2
		  middlewares:
		$3
		  services:
		    backend:
		      loadBalancer:
		        servers:
		          - url: http://127.0.0.1:$WT_BACKEND_PORT
	YAML
	mv "$1.tmp" "$1"
}

# wt_start_traefik WEB_PORT PING_PORT [DIR] starts Traefik on loopback in DIR
# (default $WL_WORK, which holds plugins-local) with the local plugin and the
# file provider watching DIR/dynamic.yml, sets WT_TRAEFIK_PID and waits until
# it answers its ping. Its standard output and error are DIR/traefik.log
# (its log, unless WL_TRAEFIK_LOG_FILE names another file).
wt_start_traefik() {
	local web=$1 ping=$2 dir=${3:-$WL_WORK} traefik extra i fwd=
	traefik=$(wt_traefik)
	# WL_TRAEFIK_TRUST_LOOPBACK=1: the web entry point keeps the
	# X-Forwarded-For of loopback clients, as behind a load balancer.
	if [[ -n ${WL_TRAEFIK_TRUST_LOOPBACK:-} ]]; then
		fwd=$'\n    forwardedHeaders:\n      trustedIPs: ["127.0.0.1/32"]'
	fi
	# WL_TRAEFIK_EXTRA_ENTRYPOINTS: more entry points, "name=host:port"
	# separated by spaces (the api's "traefik" one, say).
	# WL_TRAEFIK_LOG_FORMAT (common or json) and WL_TRAEFIK_LOG_FILE
	# (log.filePath): Traefik's own log settings.
	local logx=
	[[ -z ${WL_TRAEFIK_LOG_FORMAT:-} ]] || logx+=$'\n'"  format: $WL_TRAEFIK_LOG_FORMAT"
	[[ -z ${WL_TRAEFIK_LOG_FILE:-} ]] || logx+=$'\n'"  filePath: $WL_TRAEFIK_LOG_FILE"
	local eps=
	for extra in ${WL_TRAEFIK_EXTRA_ENTRYPOINTS:-}; do
		eps+=$(printf '  %s:\n    address: "%s"' "${extra%%=*}" "${extra#*=}")$'\n'
	done
	cat >"$dir/traefik.yml" <<-YAML
		global:
		  checkNewVersion: false
		  sendAnonymousUsage: false
		log:
		  level: ${WL_TRAEFIK_LOG_LEVEL:-INFO}$logx
		entryPoints:
		  web:
		    address: "127.0.0.1:$web"$fwd
		  ping:
		    address: "127.0.0.1:$ping"
		$eps
		ping:
		  entryPoint: ping
		providers:
		  file:
		    filename: $dir/dynamic.yml
		    watch: true
		experimental:
		  localPlugins:
		    windowlimit:
		      moduleName: $WT_MODULE
	YAML
	# WL_TRAEFIK_EXTRA_PLUGINS: more local plugins, "name:module" separated by spaces.
	for extra in ${WL_TRAEFIK_EXTRA_PLUGINS:-}; do
		printf '    %s:\n      moduleName: %s\n' "${extra%%:*}" "${extra#*:}" >>"$dir/traefik.yml"
	done
	# WL_TRAEFIK_EXTRA_STATIC: more top-level static configuration (YAML).
	[[ -z ${WL_TRAEFIK_EXTRA_STATIC:-} ]] || printf '%s\n' "$WL_TRAEFIK_EXTRA_STATIC" >>"$dir/traefik.yml"
	(cd "$dir" && exec "$traefik" --configFile="$dir/traefik.yml" >"$dir/traefik.log" 2>&1) &
	WL_PIDS+=($!)
	WT_TRAEFIK_PID=$!
	for ((i = 0; i < 300; i++)); do
		kill -0 "$WT_TRAEFIK_PID" 2>/dev/null || { cat "$dir/traefik.log" >&2; wl_die "traefik exited"; }
		[[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$ping/ping") == 200 ]] && return 0
		sleep 0.1
	done
	cat "$dir/traefik.log" >&2
	wl_die "traefik did not answer its ping within 30 s"
}

# wt_wait_status URL STATUS waits, at most 15 s, until URL answers STATUS.
wt_wait_status() {
	local i
	for ((i = 0; i < 150; i++)); do
		[[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$1") == "$2" ]] && return 0
		sleep 0.1
	done
	return 1
}
