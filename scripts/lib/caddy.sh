# Caddy helpers of e2e-caddy.sh and bench-caddy.sh (sourced, not run), on
# top of lib/common.sh: builds Caddy with xcaddy.sh into the cache (never ./caddy,
# which is the user's), finds free loopback ports, starts Caddy instances. Callers set -euo pipefail and call wl_cleanup from
# an EXIT trap.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
WC_CADDY=

# wc_build builds Caddy with this checkout's module and sets WC_CADDY to
# it. The binary goes into the cache, one per checkout (worktrees share the
# cache, and each tests its own code), not into ./caddy: the README's
# `./xcaddy.sh run --config Caddyfile.example` builds that one, and a test
# run must not replace it.
wc_build() {
	local id
	id=$(printf '%s' "$WL_ROOT" | sha256sum | cut -c1-12)
	WC_CADDY=$WL_CACHE/bin/caddy-$(basename "$WL_ROOT")-$id
	mkdir -p "$WL_CACHE/bin"
	wl_log "building $WC_CADDY with ./xcaddy.sh"
	CADDY_OUTPUT=$WC_CADDY "$WL_ROOT/xcaddy.sh" >&2
}

# wc_setup builds Caddy (wc_build) and makes a work directory; Caddy's
# autosave and storage go there, not into $HOME.
wc_setup() {
	wc_build
	WL_WORK=$(mktemp -d)
	export XDG_CONFIG_HOME=$WL_WORK/xdg-config XDG_DATA_HOME=$WL_WORK/xdg-data
}

# wc_free_ports N prints N distinct TCP ports that no socket uses, below
# the kernel's range of ephemeral ports (which outgoing connections, such as
# wrk's, take their local ports from).
wc_free_ports() {
	local n=$1 found=() p tries=0 low
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range
	((low > 12000)) || low=32768
	while ((${#found[@]} < n)); do
		((tries++ < 1000)) || wl_die "no free port found"
		p=$((10000 + RANDOM % (low - 10000)))
		[[ " ${found[*]} " == *" $p "* ]] && continue
		ss -Htan "sport = :$p" | grep -q . && continue
		found+=("$p")
	done
	printf '%s\n' "${found[@]}"
}

# wc_start CONFIG ADMIN_PORT starts `caddy run` on CONFIG and waits until
# its admin endpoint answers; its log is $WL_WORK/caddy-ADMIN_PORT.log.
# Each start gets a data directory of its own, where Caddy
# persists its memory zones, so that a part that starts Caddy again starts
# it afresh; set WC_DATA to one directory to keep the zones across starts.
wc_start() {
	local config=$1 admin=$2 i data=${WC_DATA:-}
	[[ -n $data ]] || data=$(mktemp -d "$WL_WORK/xdg-data.XXXXXX")
	XDG_DATA_HOME=$data "$WC_CADDY" run --config "$config" >"$WL_WORK/caddy-$admin.log" 2>&1 &
	WL_PIDS+=($!)
	for i in $(seq 100); do
		curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$admin/config/" && return 0
		kill -0 "${WL_PIDS[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$WL_WORK/caddy-$admin.log" >&2
	wl_die "caddy on $config did not start"
}
