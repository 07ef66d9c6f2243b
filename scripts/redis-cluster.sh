#!/usr/bin/env bash
# Starts (or stops) a throwaway three-master Redis Cluster on free loopback
# ports, persistence off, for tests and benchmarks.
#
#   scripts/redis-cluster.sh start DIR   # prints "ADDRS 127.0.0.1:p1 127.0.0.1:p2 127.0.0.1:p3"
#   scripts/redis-cluster.sh stop DIR    # kills the nodes started in DIR
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z "$cmd" || -z "$dir" ]]; then
	echo "usage: $0 start|stop DIR" >&2
	exit 2
fi

stop() {
	local pidfile
	for pidfile in "$dir"/node-*/redis.pid; do
		[[ -f "$pidfile" ]] || continue
		kill -9 "$(cat "$pidfile")" 2>/dev/null || true
		rm -f "$pidfile"
	done
}

if [[ "$cmd" == stop ]]; then
	stop
	exit 0
fi
[[ "$cmd" == start ]] || { echo "unknown command $cmd" >&2; exit 2; }

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
	else
		echo "redis-server and redis-cli are required (apt-get install redis-server)" >&2
		exit 1
	fi
fi

# free_port prints a port P such that P and P + 10000 (the node's cluster bus)
# are both free: a cluster node refuses a port above 55535.
free_port() {
	if command -v python3 >/dev/null; then
		python3 -c '
import random, socket
for _ in range(1000):
    p = random.randint(20000, 55535)
    try:
        for q in (p, p + 10000):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", q))
            finally:
                s.close()
    except OSError:
        continue
    print(p)
    break
'
	else
		shuf -i 20000-55535 -n 1
	fi
}

debug=()
if [[ $(redis-server --version | sed -n 's/.*v=\([0-9]*\)\..*/\1/p') -ge 7 ]]; then
	debug=(--enable-debug-command yes)
fi

# start_node N: starts node N on a free port (retrying if the port was
# taken meanwhile) and prints its address.
start_node() {
	local node="$dir/node-$1" port try
	for try in 1 2 3 4 5; do
		port=$(free_port)
		rm -rf "$node"
		mkdir -p "$node"
		redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
			--cluster-config-file "$node/nodes.conf" --cluster-node-timeout 2000 \
			--save "" --appendonly no --dir "$node" --daemonize yes \
			--pidfile "$node/redis.pid" --logfile "$node/redis.log" "${debug[@]}" || continue
		for _ in $(seq 200); do
			if redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1; then
				echo "127.0.0.1:$port"
				return 0
			fi
			# The daemon could not listen (the port was taken meanwhile): try another.
			grep -qE 'Address already in use|Could not create server TCP listening socket|55535 or less' \
				"$node/redis.log" 2>/dev/null && break
			sleep 0.05
		done
		[[ -f "$node/redis.pid" ]] && kill -9 "$(cat "$node/redis.pid")" 2>/dev/null || true
	done
	echo "node $1 did not start; see $node/redis.log" >&2
	return 1
}

mkdir -p "$dir"
stop
addrs=()
for i in 1 2 3; do
	addr=$(start_node "$i") || { stop; exit 1; }
	addrs+=("$addr")
done

redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 || {
	cat "$dir/create.log" >&2
	stop
	exit 1
}

# Wait until every node sees the cluster as ok.
for a in "${addrs[@]}"; do
	for _ in $(seq 200); do
		redis-cli -h 127.0.0.1 -p "${a##*:}" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
		sleep 0.05
	done
done
echo "ADDRS ${addrs[*]}"
