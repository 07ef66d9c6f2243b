# The reset checks of e2e-traefik.sh (caddymodule/e2e makes them for Caddy) (sourced after
# caddy-lib.sh or traefik-lib.sh and redis-e2e.sh, not run): a key's count
# has a life, and a reset (Caddy's admin DELETE, or the key deleted in
# Redis, as when Redis loses it) starts a new one. What was taken from the
# old life must not be spent or given back in the new one:
#
#  - leases: a hot key (window 1m, limit 3000, sub-windows of 6 s) is
#    warmed up by 600 requests alternating between two instances on one
#    redis-server, so that both hold a lease (fewer script calls than
#    requests), then reset; a burst of four times the limit right after,
#    alternating, must get at most the limit (admin DELETE: the leases
#    still out are carried into the new count) or the limit plus what the
#    leases held at the reset (a key Redis lost), and never starve;
#  - count_status: five slow requests (the backend's ?wait=3s) reserve a
#    limit of 5 that counts 401s, the key is reset while they are in
#    flight, five 401s get the fresh budget, and once the slow ones end in
#    200, their refunds must not come off the new count: the next five
#    401s get 429.
#
# The host's script supplies how a key is reset, and, for the leases, what
# each instance holds. A check that the limit did not hold is counted, not
# fatal, so that one run shows every check's figures; wl_resets_done fails
# the script after them. A check that could not run as meant (no lease
# taken, a burst cut short) dies at once.

WL_RESET_LIMIT=3000
WL_RESET_SUB=6 # seconds: the sub-window of a 1m window (sub_window's default, W/10)
WL_RESET_HELD=
WL_RESET_HELD_TEXT=
WL_RESET_FAILED=0
WL_RESET_RUN=0

# wl_reset_fail MESSAGE reports a reset check the limit did not hold.
wl_reset_fail() {
	WL_RESET_FAILED=$((WL_RESET_FAILED + 1))
	echo "FAIL: $*"
}

# wl_resets_done fails the script if a reset check failed.
wl_resets_done() {
	((WL_RESET_FAILED == 0)) || wl_die "$WL_RESET_FAILED of $WL_RESET_RUN reset checks failed"
}

# wl_burst_bin prints the path of the burst client's binary.
wl_burst_bin() { wl_go_bin wl-burst "$WL_ROOT/scripts/e2e/burst.go"; }

# wl_burst OUT N C DEADLINE URL... sends N requests to the URLs in turn, C
# at a time, all ended by DEADLINE (a Go duration), and sets WL_BURST_OK
# (the 200s), WL_BURST_TOTAL (the responses), WL_BURST_ERRORS and
# WL_BURST_TALLY ("200 x 2950, 429 x 9050").
wl_burst() {
	local out=$1 n=$2 c=$3 deadline=$4 bin urls
	shift 4
	bin=$(wl_burst_bin)
	urls=$(IFS=,; echo "$*")
	"$bin" -urls "$urls" -n "$n" -c "$c" -deadline "$deadline" >"$out" 2>"$out.err" ||
		{ cat "$out.err" >&2; wl_die "burst -urls $urls -n $n -c $c failed"; }
	read -r WL_BURST_OK WL_BURST_TOTAL WL_BURST_ERRORS < <(awk '$1 == 200 {ok = $2} $1 == "error" {e = $2} {t += $2}
		END {print ok + 0, t + 0, e + 0}' "$out")
	WL_BURST_TALLY=$(awk '{printf "%s%s x %s", (NR > 1 ? ", " : ""), $1, $2}' "$out")
}

# wl_reset_subwindow_start waits, at most one sub-window, until the
# current sub-window (on this machine's clock, which the redis-server
# shares) started less than half a second ago: a warm-up then runs and
# its leases are inspected and reset within one sub-window, before any
# lease ends and gives back.
wl_reset_subwindow_start() {
	local i
	for ((i = 0; i < 300; i++)); do
		(($(wl_now_us) % (WL_RESET_SUB * 1000000) < 500000)) && return 0
		sleep 0.025
	done
	wl_die "no sub-window start within $((WL_RESET_SUB + 1)) s"
}

# wl_reset_leases WHAT MODE HELD_FN RESET_FN URL_A URL_B: URL_A and URL_B
# are one zone (window 1m, limit WL_RESET_LIMIT, leases on) on two
# instances sharing the redis-server of WL_REDIS_PORT, keyed by the
# client's address. A warm-up of 600 requests, 8 at a time, alternating,
# early in a sub-window, must take fewer script calls than requests (the
# key is hot: leases spared some); then HELD_FN must set WL_RESET_HELD to
# the units the instances' leases hold ("" when the host cannot tell) and
# WL_RESET_HELD_TEXT to a description, and fail when an instance holds
# none (the warm-up is then tried again, three times at most). RESET_FN
# resets the key; at once, 4 x the limit requests, 16 at a time,
# alternating, all ended within 40 s (well inside the window after the
# reset), count their 200s against MODE's bound:
#
#   delete  (admin DELETE) at most the limit, and at least nine tenths
#           of it (the reset must not starve the key: the fresh count
#           starts with the other instance's leased units counted, and
#           gets back those spent before its life was last confirmed when
#           that instance next calls; what it spent since stays counted,
#           at most a lease);
#   lost    (the key deleted in Redis, the leases known) at most the limit
#           plus what the leases held at the reset;
#   tenth   (the key deleted in Redis, the leases unknown) at most the
#           limit plus a tenth.
#
# The line it prints (ok or FAIL) gives the excess over the limit.
wl_reset_leases() {
	local what=$1 mode=$2 held_fn=$3 reset_fn=$4 a=$5 b=$6 try calls0 calls warm n t0 took excess bound fail=
	n=$((4 * WL_RESET_LIMIT))
	WL_RESET_RUN=$((WL_RESET_RUN + 1))
	for ((try = 1; ; try++)); do
		wl_reset_subwindow_start
		calls0=$(wl_script_calls)
		wl_burst "$WL_WORK/reset-warm.out" 600 8 20s "$a" "$b"
		calls=$(($(wl_script_calls) - calls0))
		warm=$WL_BURST_TALLY
		((WL_BURST_TOTAL == 600 && WL_BURST_ERRORS == 0)) || wl_die "$what: warm-up: $warm, want 600 responses"
		((calls < 600)) || wl_die "$what: warm-up: $calls script calls for 600 requests ($warm): no lease spared one, the key is not hot"
		"$held_fn" && break
		((try < 3)) || wl_die "$what: after $try warm-ups, not both instances hold a lease: $WL_RESET_HELD_TEXT"
		wl_log "$what: warm-up $try ($warm, $calls script calls): $WL_RESET_HELD_TEXT; trying again"
	done
	"$reset_fn"
	t0=$(wl_now_us)
	wl_burst "$WL_WORK/reset-burst.out" "$n" 16 40s "$a" "$b"
	took=$(($(wl_now_us) - t0))
	((WL_BURST_TOTAL == n && WL_BURST_ERRORS == 0)) ||
		wl_die "$what: the burst after the reset: $WL_BURST_TALLY, want $n responses within 40 s"
	excess=$((WL_BURST_OK - WL_RESET_LIMIT))
	case $mode in
	delete)
		bound="at most $WL_RESET_LIMIT, at least $((WL_RESET_LIMIT - WL_RESET_LIMIT / 10))"
		((WL_BURST_OK <= WL_RESET_LIMIT)) || fail="over the limit"
		((WL_BURST_OK >= WL_RESET_LIMIT - WL_RESET_LIMIT / 10)) || fail="fewer than nine tenths of the limit: the reset starved the key"
		;;
	lost)
		((WL_BURST_OK <= WL_RESET_LIMIT + WL_RESET_HELD)) || fail="over the limit plus the units leased at the reset"
		bound="at most $((WL_RESET_LIMIT + WL_RESET_HELD)), the limit plus the leases"
		;;
	tenth)
		((WL_BURST_OK <= WL_RESET_LIMIT + WL_RESET_LIMIT / 10)) || fail="over the limit plus a tenth"
		bound="at most $((WL_RESET_LIMIT + WL_RESET_LIMIT / 10)), the limit plus a tenth"
		;;
	*) wl_die "wl_reset_leases: mode '$mode'" ;;
	esac
	WL_SUMMARY="$what: warm-up $warm ($calls script calls), $WL_RESET_HELD_TEXT at the reset; the window after it admitted $WL_BURST_OK of $n in $(wl_secs "$took") s (limit $WL_RESET_LIMIT, $bound): $((excess > 0 ? excess : 0)) over the limit; $WL_BURST_TALLY"
	if [[ -n $fail ]]; then
		wl_reset_fail "$WL_SUMMARY: $fail"
	else
		wl_pass "$WL_SUMMARY"
	fi
}

# wl_reset_count_status WHAT URL FROM RESET_FN [URL2]: URL (and URL2, by
# default URL, the same zone on another instance) is a zone of limit 5 per
# minute, keyed by the client's address, that counts 401s, in front of the
# backend (which answers the status X-Status names, after the query's
# wait). From the loopback address FROM: five requests to URL that will
# end in 200 after 3 s reserve the whole budget (X-RateLimit-Remaining
# 4..0 between them); half a second later RESET_FN resets the key FROM;
# five 401s to URL2 then each get 401 (a fresh budget, Remaining 4..0);
# the slow five each end in 200; and five more 401s to URL2 each get 429:
# the slow ones' refunds are of the old life and give nothing back to the
# new one. It prints the sequences on an ok or FAIL line. The zone's
# window is 1m (sub-windows of 6 s): it starts early in a sub-window, so
# that the slow ones and the fresh 401s are counted in the same one (a
# refund of a reservation counted in an older sub-window than the new
# count's would miss it even without lives).
wl_reset_count_status() {
	local what=$1 url=$2 from=$3 reset_fn=$4 url2=${5:-$2} i pids=() slow slow_rem fresh after remaining seq
	WL_RESET_RUN=$((WL_RESET_RUN + 1))
	wl_reset_subwindow_start
	for i in 1 2 3 4 5; do
		curl -s -o /dev/null --max-time 15 --interface "$from" -H 'X-Status: 200' \
			-w '%{http_code} %header{x-ratelimit-remaining}\n' "$url?wait=3s" >"$WL_WORK/reset-slow.$from.$i" 2>&1 &
		pids+=($!)
		WL_PIDS+=($!)
	done
	sleep 0.5
	"$reset_fn" "$from"
	fresh=() remaining=()
	for i in 1 2 3 4 5; do
		fresh+=("$(wl_fetch "$url2" --interface "$from" -H 'X-Status: 401')")
		remaining+=("$(wl_header X-RateLimit-Remaining)")
	done
	for i in "${pids[@]}"; do
		wait "$i" || true
		wl_forget "$i"
	done
	slow=$(cat "$WL_WORK"/reset-slow."$from".? | awk '{print $1}' | paste -sd' ')
	slow_rem=$(cat "$WL_WORK"/reset-slow."$from".? | awk '{print $2}' | sort -n | paste -sd' ')
	after=()
	for i in 1 2 3 4 5; do after+=("$(wl_fetch "$url2" --interface "$from" -H 'X-Status: 401')"); done
	seq="slow 200s in flight: $slow (Remaining $slow_rem at their check); after the reset, 5 x 401: ${fresh[*]} (Remaining ${remaining[*]}); once the slow ones ended, 5 x 401: ${after[*]}"
	[[ $slow == "200 200 200 200 200" && $slow_rem == "0 1 2 3 4" ]] ||
		wl_die "$what: $seq; want the slow ones 200 with Remaining 0 1 2 3 4 (all five counted before the reset)"
	[[ ${fresh[*]} == "401 401 401 401 401" && ${remaining[*]} == "4 3 2 1 0" ]] ||
		wl_die "$what: $seq; want 401 x 5 with Remaining 4 3 2 1 0 after the reset (a fresh budget)"
	WL_SUMMARY="$what, count_status 401, limit 5, key $from reset while 5 requests were in flight: $seq"
	if [[ ${after[*]} == "429 429 429 429 429" ]]; then
		wl_pass "$WL_SUMMARY"
	else
		wl_reset_fail "$WL_SUMMARY; want 429 x 5: the refunds of requests reserved before the reset came off the new count"
	fi
}
