# Common helpers of the e2e and bench scripts (sourced, not run), through
# lib/caddy.sh or lib/traefik.sh: logging and failing, installing missing
# commands, counting passed checks, checking README's lines, building the
# Go commands of scripts/ and starting the loopback backend, and stopping
# the processes a script started. Callers set -euo pipefail and call
# wl_cleanup from an EXIT trap.

WL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WL_CACHE=${WINDOWLIMIT_CACHE:-$HOME/.cache/windowlimit}
WL_WORK=
WL_PIDS=()
WL_CHECKS=0
WL_BACKEND_PORT=

wl_log() { printf '%s\n' "$*" >&2; }
wl_die() {
	wl_log "FAIL: $*"
	exit 1
}

# wl_pass MESSAGE counts a passed check and prints it.
wl_pass() {
	WL_CHECKS=$((WL_CHECKS + 1))
	echo "ok: $*"
}

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

# wl_progress LABEL CMD... runs CMD and, while it runs, prints
# "LABEL: still working (Ns)" every 30 s, so that a long build is never
# silent for minutes. It returns CMD's status.
wl_progress() {
	local label=$1 pid next=30 start=$SECONDS rc=0
	shift
	"$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS - start >= next)); then
			wl_log "$label: still working ($((SECONDS - start))s)"
			next=$((next + 30))
		fi
		sleep 0.5
	done
	wait "$pid" || rc=$?
	return "$rc"
}

# wl_readme_lines HEADING HOST prints the lines of the first sh block under
# README.md's "## HEADING" that names HOST: each command, then the
# "# output" line under it.
wl_readme_lines() {
	awk -v h="## $1" -v host="$2" '$0 == h {q = 1; next} /^## / {q = 0}
		q && /^```sh/ {b = 1; text = ""; next}
		q && b && /^```/ {b = 0; if (index(text, host)) {printf "%s", text; exit}; next}
		q && b {text = text $0 "\n"}' "$WL_ROOT/README.md"
}

# wl_readme_check LINES HOST ADDR LOG [ZONE=MAX...] runs each command of
# LINES (a file from wl_readme_lines) with HOST replaced by ADDR, and
# compares its output with the "# ..." line under it; on a difference it
# prints LOG, the server's log, and fails. A 429's JSON
# "retry_after_seconds": N matches any N from 1 to the MAX of its "zone":
# N depends on where in its sub-window the run started, and MAX is the
# window plus one sub-window (docs/headers.md). At least 5 lines must be
# checked.
wl_readme_check() {
	local lines=$1 host=$2 addr=$3 log=$4 line cmd= want got n=0
	shift 4
	while IFS= read -r line; do
		if [[ $line == "# "* ]]; then
			[[ -n $cmd ]] || wl_die "README line '$line' follows no command"
			want=${line#"# "}
			got=$(bash -c "${cmd//"$host"/$addr}" 2>&1 | sed 's/[[:space:]]*$//')
			if [[ $got != "$want" ]] && ! wl_retry_within "$got" "$want" "$@"; then
				[[ -z $log ]] || cat "$log" >&2
				wl_die "'$cmd' printed '$got', README says '$want'"
			fi
			wl_pass "README: $cmd # $got"
			n=$((n + 1))
			cmd=
		else
			[[ -z $cmd ]] || wl_die "README's '$cmd' has no '# output' line under it"
			cmd=$line
		fi
	done <"$lines"
	[[ -z $cmd && $n -ge 5 ]] || wl_die "$n README lines checked, want 5 or more, each with its output"
}

# wl_retry_within GOT WANT [ZONE=MAX...] reports whether GOT is WANT but
# for the number of "retry_after_seconds", which is from 1 to the MAX of
# GOT's "zone".
wl_retry_within() {
	local got=$1 want=$2 re='"retry_after_seconds": ([0-9]+)' zre='"zone": "([^"]*)"' n zone spec max=
	shift 2
	[[ $want =~ $re ]] || return 1
	want=${want/"${BASH_REMATCH[0]}"/'"retry_after_seconds": N'}
	[[ $got =~ $re ]] || return 1
	n=${BASH_REMATCH[1]}
	[[ ${got/"${BASH_REMATCH[0]}"/'"retry_after_seconds": N'} == "$want" && $got =~ $zre ]] || return 1
	zone=${BASH_REMATCH[1]}
	for spec; do
		[[ ${spec%%=*} == "$zone" ]] && max=${spec#*=}
	done
	[[ -n $max ]] && ((10#$n >= 1 && 10#$n <= max))
}

# wl_go_bin NAME SOURCE prints the path of a binary built from SOURCE, the
# main.go of a one-file command of scripts/, inside this module (so that its
# imports resolve against go.mod). The binary is cached under a name that
# holds a hash of SOURCE: checkouts of other versions share the cache, and
# none of them may run another's. The first build says so, with
# wl_progress's lines: on a cold Go build cache it takes up to a minute.
wl_go_bin() {
	local name=$1 src=$2 sum bin
	sum=$(sha256sum <"$src")
	bin=$WL_CACHE/$name-${sum:0:12}
	if [[ ! -x $bin ]]; then
		mkdir -p "$WL_CACHE"
		wl_log "$name: compiling ${src#"$WL_ROOT/"}, once (up to a minute; cached as $bin)"
		wl_progress "$name" wl_go_build "$bin.tmp.$$" "$src" || wl_die "go build $src failed"
		mv "$bin.tmp.$$" "$bin"
	fi
	echo "$bin"
}

# wl_go_build OUT SRC builds SRC into OUT inside this module.
wl_go_build() { (cd "$WL_ROOT" && go build -o "$1" "$2"); }

# wl_backend_bin prints the path of scripts/e2e/backend's binary.
wl_backend_bin() { wl_go_bin wl-backend "$WL_ROOT/scripts/e2e/backend/main.go"; }

# wl_start_backend starts the backend on a free loopback port and sets
# WL_BACKEND_PORT; its log is $WL_WORK/backend.log.
wl_start_backend() {
	local bin i
	bin=$(wl_backend_bin)
	rm -f "$WL_WORK/backend.port"
	"$bin" -port-file "$WL_WORK/backend.port" 2>"$WL_WORK/backend.log" &
	WL_PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		[[ -s $WL_WORK/backend.port ]] && break
		sleep 0.1
	done
	[[ -s $WL_WORK/backend.port ]] || wl_die "backend did not start"
	WL_BACKEND_PORT=$(cat "$WL_WORK/backend.port")
}

# wl_forget PID drops a process that has ended from those wl_stop kills.
wl_forget() {
	local keep=() pid
	for pid in "${WL_PIDS[@]}"; do
		[[ $pid == "$1" ]] || keep+=("$pid")
	done
	WL_PIDS=("${keep[@]}")
}

# wl_stop stops the processes this script started.
wl_stop() {
	local pid
	for pid in "${WL_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${WL_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	WL_PIDS=()
}

# wl_cleanup stops them and removes the work directory (kept when
# WL_KEEP_WORK is set).
wl_cleanup() {
	wl_stop
	if [[ -n $WL_WORK && -z ${WL_KEEP_WORK:-} ]]; then
		rm -rf "$WL_WORK"
	fi
	return 0
}
