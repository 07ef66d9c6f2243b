#!/usr/bin/env bash
# The project's test command (README.md, .ci/run). On a fresh Debian machine
# it installs what the tests need, then runs every suite: static checks, the
# unit tests with -race, the yaegi harness, the costs against their record,
# and the end-to-end tests against real Caddy and Traefik binaries. Big
# builds are cached outside the repo under
# ${WINDOWLIMIT_CACHE:-$HOME/.cache/windowlimit}.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each part is a step; the last line says passed or failed, which parts
# ran, where it failed, and how long it took.
parts=()
step() {
	parts+=("$*")
	printf '\n== %s\n' "$*"
}
verdict() {
	local rc=$? took="$((SECONDS / 60)) min $((SECONDS % 60)) s" list
	list=$(printf '%s; ' "${parts[@]+"${parts[@]}"}")
	if ((rc == 0)); then
		printf '\nscripts/test.sh: passed, %d parts (%s), in %s\n' "${#parts[@]}" "${list%; }" "$took"
	elif ((${#parts[@]})); then
		printf '\nscripts/test.sh: FAILED in "%s" (exit %d), after %s; parts run: %s\n' \
			"${parts[${#parts[@]} - 1]}" "$rc" "$took" "${list%; }"
	else
		printf '\nscripts/test.sh: FAILED before any part (exit %d), after %s\n' "$rc" "$took"
	fi
}
trap verdict EXIT

# Debian packages the tests start or drive.
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v curl >/dev/null 2>&1 || missing+=(curl)
# callgrind counts the script's instructions for scripts/costs.
command -v callgrind_control >/dev/null 2>&1 || missing+=(valgrind)
if ((${#missing[@]})); then
	step "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

step "static checks"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
	printf 'gofmt: not formatted:\n%s\n' "$unformatted"
	exit 1
fi
go vet ./...
(cd scripts/yaegitest && go vet ./...)
# Traefik loads shared/ and traefikplugin/ through yaegi: standard library
# and this module only, and no unsafe.
module=$(go list -m)
outside=$(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./shared/... ./traefikplugin/... | grep -v "^$module" || true)
if [[ -n $outside ]] || grep -rl --include='*.go' --exclude='*_test.go' '"unsafe"' shared traefikplugin; then
	printf 'shared/ and traefikplugin/ must import the standard library only:\n%s\n' "$outside"
	exit 1
fi
if grep -q 'traefik/yaegi\|traefik/traefik' go.mod; then
	echo "the root go.mod must not require yaegi or traefik (the plugin catalog rejects it)"
	exit 1
fi

step "unit and integration tests (-race)"
# The tests hold on a busy machine, so every package runs at once: the
# lease simulations expire Redis's keys on their simulated clock, and
# shared/resp checks its timeouts from below (only a hang fails them from
# above). Under -race the lease simulations run smaller (raceEnabled in
# shared/lease); `go test ./shared/lease` runs them in full.
go test -race -count=1 -timeout 20m ./...

# Each fuzz target, one per go test call, for a bounded time on top of its
# committed seeds (testdata/fuzz/<target>/). A failure fails the script and
# leaves the failing input under the package's testdata/fuzz/. Go 1.26's
# fuzzing coordinator can fail a run at the end of -fuzztime with a bare
# "context deadline exceeded" and no input (golang/go#75804, fixed in Go
# 1.27): such a run, and only such a run, is tried once more.
fuzztime=${WL_FUZZTIME:-10s}
step "fuzz targets, $fuzztime each (WL_FUZZTIME)"
fuzz_log=$(mktemp)
while read -r pkg target; do
	for try in 1 2; do
		printf -- '-- %s %s\n' "$pkg" "$target"
		if go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "$pkg" </dev/null 2>&1 | tee "$fuzz_log"; then
			break
		fi
		if [[ $try == 1 ]] && grep -q '^    context deadline exceeded$' "$fuzz_log" &&
			! grep -q 'Failing input written\|panic:\|_test.go:[0-9]' "$fuzz_log"; then
			echo "-- $target: the coordinator's deadline race (golang/go#75804), no failing input; once more"
			continue
		fi
		exit 1
	done
done <<'EOF'
./caddymodule FuzzCaddyfile
./caddymodule FuzzJSON
./caddymodule FuzzKeySource
./traefikplugin FuzzNew
./traefikplugin FuzzKeyOf
./traefikplugin FuzzClientIP
./shared/resp FuzzReadReply
./shared/resp FuzzReadInts
./shared/resp FuzzPipelinedInts
./shared/ratelimit FuzzReadSnapshot
EOF
rm -f "$fuzz_log"

step "yaegi harness: shared/ and the plugin interpreted as Traefik does"
(cd scripts/yaegitest && go test -count=1 ./...)

step "figures: the documentation's deterministic counts against what their commands print"
go run ./scripts/figures -fast

# The costs no machine moves (allocations, the script's calls and
# commands, bytes a key) against docs/costs.md: one that grew fails.
step "costs: the deterministic costs against their record (docs/costs.md)"
go run ./scripts/costs

step "end to end: Caddy"
# caddymodule/e2e's tests run Caddy as their own test binary, without -race
# (their build tag leaves them out of the step above); e2e-caddy.sh
# smoke-tests the binary ./xcaddy.sh builds.
go test -count=1 -timeout 10m ./caddymodule/e2e
scripts/e2e-caddy.sh

step "end to end: Traefik"
# traefikplugin/e2e's tests run a real Traefik v3.6.12, without -race like
# Caddy's; wt_traefik builds it once into the cache (6 to 15 minutes, with
# progress lines) before the tests look for it.
(source scripts/lib/traefik.sh && wt_traefik >/dev/null)
go test -count=1 -timeout 15m ./traefikplugin/e2e
