# The count_status attack checks of e2e-traefik.sh (caddymodule/e2e makes them for Caddy)
# (sourced after caddy-lib.sh or traefik-lib.sh, not run). A login on the
# backend (scripts/e2e/backend.go: 401 for a wrong password, 200 for
# open-sesame) sits behind the host's reverse proxy and a limit of 5 per
# minute per client address that counts 401s (count_status 401,
# countStatus ["401"]). The attack client (scripts/e2e/attack.go) tries
# wrong passwords in the ways that leave the proxy without a final status
# to count by, each attack from its own loopback source address, so on its
# own key; the backend counts the attempts it got from each address. Each
# attack passes when the backend got at most 5: the limit held whatever the
# client did with its connection. Failures are counted, not fatal, so that
# one run shows every attack's numbers; wl_attacks_done fails the script
# after them.

WL_ATTACK_LIMIT=5
WL_ATTACK_FAILED=0
WL_ATTACK_RUN=0

# wl_attack_bin prints the path of the attack client's binary.
wl_attack_bin() { wl_go_bin wl-attack "$WL_ROOT/scripts/e2e/attack.go"; }

# wl_backend_count CLIENT prints how many login attempts the backend got
# from CLIENT.
wl_backend_count() { curl -s --max-time 5 "http://127.0.0.1:$WL_BACKEND_PORT/count?client=$1"; }

# wl_tally FILE prints the lines of FILE as "N x LINE, ...", in the order
# they first appear.
wl_tally() {
	awk '!($0 in n) {order[++k] = $0} {n[$0]++}
		END {for (i = 1; i <= k; i++) printf "%s%d x %s", (i > 1 ? ", " : ""), n[order[i]], order[i]; print ""}' "$1"
}

# wl_attack_fail MESSAGE reports an attack that got through.
wl_attack_fail() {
	WL_ATTACK_FAILED=$((WL_ATTACK_FAILED + 1))
	echo "FAIL: $*"
}

# wl_attack WHAT NAME FROM URL RESULTS [attack args]: the attack client
# runs from FROM against URL; every line it prints must match the regular
# expression RESULTS (the attack ran as meant), the backend must have got
# at least one attempt from FROM (the route reaches it) and at most
# WL_ATTACK_LIMIT. For the attacks that read every response's status, the
# backend's count must also equal the 401s the client saw: each attempt
# that reached it was answered, and seen.
wl_attack() {
	local what=$1 name=$2 from=$3 url=$4 results=$5 bin out got seen tally want
	shift 5
	bin=$(wl_attack_bin)
	out=$WL_WORK/attack-$from.out
	WL_ATTACK_RUN=$((WL_ATTACK_RUN + 1))
	"$bin" -from "$from" -url "$url" "$@" >"$out" 2>"$out.err" || true
	got=$(wl_backend_count "$from")
	tally=$(wl_tally "$out")
	seen=$(grep -cx 401 "$out" || true)
	want="$what: $name ($*, from $from)"
	if [[ -s $out.err ]] || grep -qvxE "$results" "$out" || ! [[ -s $out ]]; then
		wl_attack_fail "$want: the attack did not run as meant: $tally; $(head -3 "$out.err" | paste -sd' ')"
	elif ! [[ $got =~ ^[0-9]+$ ]] || ((got < 1)); then
		wl_attack_fail "$want: the backend got '$got' attempts, want 1..$WL_ATTACK_LIMIT: is the route right?"
	elif [[ $name != tarpit ]] && ((got != seen)); then
		wl_attack_fail "$want: the backend got $got attempts, the client saw $seen x 401"
	elif ((got > WL_ATTACK_LIMIT)); then
		wl_attack_fail "$want: the backend got $got login attempts within the window, limit $WL_ATTACK_LIMIT; the client saw $tally"
	else
		wl_pass "$want: the backend got $got, limit $WL_ATTACK_LIMIT; the client saw $tally"
	fi
}

# wl_attacks WHAT URL NET: each attack on the login at URL (which the
# backend answers; the query sets its delays), from the source addresses
# NET.1 to NET.7 (NET: the first three octets of a loopback address, one
# key per attack):
#
#  reset         30 tries, each reading the status line, then resetting the
#                connection (SO_LINGER 0): the backend sends a 401 with
#                64 KiB of body at once, more than a proxy buffers, so its
#                status goes out whether or not the proxy passes flushes
#                on, and holds the rest 10 s: the proxy is mid-body when
#                the RST comes;
#  midbody       the same after the headers and the body's first byte;
#  h2reset       30 streams on one h2c connection, each reset
#                (RST_STREAM CANCEL) as soon as its HEADERS come;
#  tarpit        20 guesses, given up after 300 ms, while the backend
#                answers a wrong password after 500 ms and the right one,
#                the 20th, at once: a guess is told by its timeout;
#  concurrent    200 tries at once, each on its own connection, answered
#                after 200 ms;
#  h2concurrent  200 tries at once as streams of one h2c connection.
#
# Then the limit must still do its job: 12 logins with the password, then
# 7 wrong ones, give exactly 12 x 200 (uncounted), 5 x 401, 2 x 429, and
# the backend got 17.
wl_attacks() {
	local what=$1 url=$2 net=$3 from bin got statuses want
	wl_attack "$what" reset "$net.1" "$url?hold=10s&pad=65536" '401|429' -mode reset -n 30
	wl_attack "$what" midbody "$net.2" "$url?hold=10s&pad=65536" '401|429' -mode midbody -n 30
	wl_attack "$what" h2reset "$net.3" "$url?hold=10s&pad=65536" '401|429' -mode h2reset -n 30
	wl_attack "$what" tarpit "$net.4" "$url?wait=500ms" 'timeout|200|429' -mode tarpit -n 20 -timeout 300ms
	wl_attack "$what" concurrent "$net.5" "$url?wait=200ms" '401|429' -mode concurrent -n 200
	wl_attack "$what" h2concurrent "$net.6" "$url?wait=200ms" '401|429' -mode h2concurrent -n 200

	from=$net.7
	bin=$(wl_attack_bin)
	WL_ATTACK_RUN=$((WL_ATTACK_RUN + 1))
	statuses=$("$bin" -mode sequence -right 12 -n 7 -from "$from" -url "$url" 2>"$WL_WORK/attack-$from.err" | paste -sd' ' || true)
	got=$(wl_backend_count "$from")
	want="$(printf '200 %.0s' {1..12})$(printf '401 %.0s' {1..5})429 429"
	if [[ $statuses == "$want" && $got == 17 ]]; then
		wl_pass "$what: sequence (from $from): 12 logins with the password, then 7 wrong: 12 x 200, 5 x 401, 2 x 429; the backend got 17"
	else
		wl_attack_fail "$what: sequence (from $from): 12 logins with the password, then 7 wrong: '$statuses', want '$want'; the backend got '$got', want 17 $(head -3 "$WL_WORK/attack-$from.err" | paste -sd' ')"
	fi
}

# wl_attacks_done fails the script if an attack got through.
wl_attacks_done() {
	((WL_ATTACK_FAILED == 0)) || wl_die "$WL_ATTACK_FAILED of $WL_ATTACK_RUN count_status attack checks failed"
}
