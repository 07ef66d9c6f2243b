# Shared by e2e-caddy.sh and bench-caddy.sh (sourced, not run): builds
# ./caddy with xcaddy.sh, finds free loopback ports, starts and stops Caddy
# instances. Callers set -euo pipefail and call wc_cleanup from an EXIT trap.

WC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WC_CACHE=${WINDOWLIMIT_CACHE:-$HOME/.cache/windowlimit}
WC_CADDY=
WC_WORK=
WC_PIDS=()

wc_log() { printf '%s\n' "$*" >&2; }
wc_die() {
	wc_log "FAIL: $*"
	exit 1
}

# wc_need installs the Debian packages of the missing commands ("cmd:pkg").
wc_need() {
	local missing=() spec
	for spec in "$@"; do
		command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}")
	done
	((${#missing[@]} == 0)) && return 0
	wc_log "installing ${missing[*]}"
	apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# wc_setup builds Caddy with this checkout's module and makes a work
# directory; Caddy's autosave and storage go there, not into $HOME.
wc_setup() {
	wc_log "building caddy with ./xcaddy.sh"
	"$WC_ROOT/xcaddy.sh" >&2
	WC_CADDY=$WC_ROOT/caddy
	WC_WORK=$(mktemp -d)
	export XDG_CONFIG_HOME=$WC_WORK/xdg-config XDG_DATA_HOME=$WC_WORK/xdg-data
}

# wc_free_ports N prints N distinct TCP ports that no socket uses, below
# the kernel's range of ephemeral ports (which outgoing connections, such as
# wrk's, take their local ports from).
wc_free_ports() {
	local n=$1 found=() p tries=0 low
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range
	((low > 12000)) || low=32768
	while ((${#found[@]} < n)); do
		((tries++ < 1000)) || wc_die "no free port found"
		p=$((10000 + RANDOM % (low - 10000)))
		[[ " ${found[*]} " == *" $p "* ]] && continue
		ss -Htan "sport = :$p" | grep -q . && continue
		found+=("$p")
	done
	printf '%s\n' "${found[@]}"
}

# wc_start CONFIG ADMIN_PORT starts `caddy run` on CONFIG and waits until
# its admin endpoint answers.
wc_start() {
	local config=$1 admin=$2 i
	"$WC_CADDY" run --config "$config" >"$WC_WORK/caddy-$admin.log" 2>&1 &
	WC_PIDS+=($!)
	for i in $(seq 100); do
		curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$admin/config/" && return 0
		kill -0 "${WC_PIDS[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$WC_WORK/caddy-$admin.log" >&2
	wc_die "caddy on $config did not start"
}

# wc_stop stops the Caddy instances this script started.
wc_stop() {
	local pid
	for pid in "${WC_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	WC_PIDS=()
}

wc_cleanup() {
	wc_stop
	[[ -n $WC_WORK ]] && rm -rf "$WC_WORK"
	return 0
}
