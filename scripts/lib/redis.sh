# The throwaway redis-server of the benchmarks (sourced after lib/common.sh, not
# run): bench-lease.sh and bench-traefik.sh keep their counts in it. The
# tests start theirs from Go (internal/redistest).

WL_REDIS_PORT=
WL_REDIS_PID=

# wl_redis_start PORT starts the throwaway redis-server on loopback PORT,
# persistence off, sets WL_REDIS_PORT and WL_REDIS_PID and waits until it
# answers.
wl_redis_start() {
	local i
	WL_REDIS_PORT=$1
	redis-server --port "$WL_REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WL_WORK" \
		>>"$WL_WORK/redis.log" 2>&1 &
	WL_REDIS_PID=$!
	WL_PIDS+=("$WL_REDIS_PID")
	for ((i = 0; i < 100; i++)); do
		[[ $(redis-cli -p "$WL_REDIS_PORT" ping 2>/dev/null) == PONG ]] && return 0
		sleep 0.02
	done
	wl_die "redis-server did not start"
}
