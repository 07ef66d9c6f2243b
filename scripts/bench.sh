#!/usr/bin/env bash
# Prints the figures docs/benchmarks.md quotes for the core: compiled benchmarks
# (ns/op, allocs, bytes per key), the same decision under yaegi (µs/op and
# interpreter allocations, with a naive sliding window as the yardstick in
# the same run), and the accuracy table. Pass -all to run the proxy and
# Redis benchmarks too (wrk against real Caddy and Traefik, a throwaway
# redis-server), leases included (bench-lease.sh: fleets of instances on
# one Redis), the key floods through both hosts (bench-flood.sh), and the
# snapshots of memory zones (their in-process figures, and bench-persist.sh:
# a real Caddy with and without snapshots every second).
set -euo pipefail
cd "$(dirname "$0")/.."

printf '== core, compiled\n'
go test -run '^$' -bench 'Take|BytesPerKey' -benchtime 1s ./shared/ratelimit

printf '\n== core under yaegi\n'
(cd scripts/yaegitest && go test -run '^$' -bench 'TakeInterpreted' -benchtime 20000x .)

printf '\n== accuracy\n'
go test -count=1 -run TestAccuracyReport -v ./shared/ratelimit | sed -n '/peak =/,/^$/p'

if [[ ${1:-} == -all ]]; then
	scripts/bench-caddy.sh
	scripts/bench-traefik.sh
	scripts/bench-redis.sh
	scripts/bench-lease.sh
	scripts/bench-flood.sh
	WL_SNAPSHOT_FIGURES=1 go test -count=1 -run TestSnapshotFigures -v ./shared/ratelimit
	scripts/bench-persist.sh
fi
