#!/usr/bin/env bash
# The smoke test of the Caddy binary ./xcaddy.sh builds, as a user runs it:
# `./xcaddy.sh version` says it reused the binary just built (no 3 to 5
# minute announcement) before Caddy's version; `caddy validate` and `caddy
# adapt` accept Caddyfile.example; and the example, run on a free loopback
# port, answers the curl lines of README.md's Caddy quickstart with the
# "# ..." line under each (retry_after_seconds from 1 to the zone's window
# plus one sub-window).
#
# Every other end-to-end check of the Caddy module is a Go test in
# caddymodule/e2e, which runs Caddy as its own test binary (scripts/test.sh
# runs both; docs/development.md lists them):
#
#   go test -count=1 ./caddymodule/e2e
#   go test -count=1 -run TestE2EReload -v ./caddymodule/e2e
#
# WL_PARTS=example (the only part) is accepted, as before.
set -euo pipefail
source "$(dirname "$0")/lib/caddy.sh"
trap wl_cleanup EXIT

case ${WL_PARTS:-all} in
all | example) ;;
*) wl_die "WL_PARTS '$WL_PARTS': want all or example" ;;
esac

wl_need curl:curl ss:iproute2
wc_setup
read -r EX_WEB EX_ADMIN < <(wc_free_ports 2 | paste -sd' ')

# example_part: Caddyfile.example, then README's Caddy quickstart.
example_part() {
	# ./xcaddy.sh <command>, as README's quickstart runs it: the build's
	# line before the command's output. wc_build has just built the binary,
	# so it is reused, and no first build of 3 to 5 minutes is announced
	# (xcaddy, when on PATH, builds afresh every time: then the time it took).
	CADDY_OUTPUT=$WC_CADDY "$WL_ROOT/xcaddy.sh" version >"$WL_WORK/xcaddy.log" 2>&1 ||
		{ cat "$WL_WORK/xcaddy.log" >&2; wl_die "./xcaddy.sh version failed"; }
	local built='^xcaddy.sh: .* is up to date with this checkout: reused it \(checked in [0-9]+ min [0-9]+ s\)$'
	command -v xcaddy >/dev/null && built='^xcaddy.sh: (built .* in [0-9]+ min [0-9]+ s|.* reused it .*)$'
	grep -qE "$built" "$WL_WORK/xcaddy.log" && ! grep -q "3 to 5 minutes" "$WL_WORK/xcaddy.log" &&
		grep -q '^v2\.' "$WL_WORK/xcaddy.log" ||
		{ cat "$WL_WORK/xcaddy.log" >&2; wl_die "./xcaddy.sh version: want a line matching '$built' before Caddy's version, and no 3 to 5 minute announcement"; }
	wl_pass "./xcaddy.sh version: $(grep -E "$built" "$WL_WORK/xcaddy.log"); then $(grep '^v2\.' "$WL_WORK/xcaddy.log" | cut -c1-20)"
	(cd "$WL_ROOT" && "$WC_CADDY" validate --config Caddyfile.example) >"$WL_WORK/validate.log" 2>&1 ||
		{ cat "$WL_WORK/validate.log" >&2; wl_die "caddy validate rejected Caddyfile.example"; }
	wl_pass "caddy validate --config Caddyfile.example"
	(cd "$WL_ROOT" && "$WC_CADDY" adapt --config Caddyfile.example) >"$WL_WORK/example.json" 2>"$WL_WORK/adapt.log" ||
		{ cat "$WL_WORK/adapt.log" >&2; wl_die "caddy adapt rejected Caddyfile.example"; }
	grep -q '"handler":"rate_limit"' "$WL_WORK/example.json" || wl_die "the adapted example has no rate_limit handler"
	wl_pass "caddy adapt --config Caddyfile.example"

	# The example as shipped, moved to free ports.
	{
		printf '{\n\tadmin 127.0.0.1:%s\n\tpersist_config off\n}\n' "$EX_ADMIN"
		sed "s/^:8080 {/:$EX_WEB {/" "$WL_ROOT/Caddyfile.example"
	} >"$WL_WORK/Caddyfile.example"

	# README's Caddy quickstart, on the example: the api zone is 1m in
	# sub-windows of 6s, the login zone 15m in sub-windows of 90s.
	wl_readme_lines "Quickstart: Caddy" localhost:8080 >"$WL_WORK/readme-lines"
	[[ -s $WL_WORK/readme-lines ]] || wl_die "no curl lines under README's Quickstart: Caddy"
	wc_start "$WL_WORK/Caddyfile.example" "$EX_ADMIN"
	wl_readme_check "$WL_WORK/readme-lines" localhost:8080 "127.0.0.1:$EX_WEB" "$WL_WORK/caddy-$EX_ADMIN.log" api=66 login=990
	wl_stop
}

example_part
echo "e2e-caddy: $WL_CHECKS passed, 0 failed"
