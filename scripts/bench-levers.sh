#!/usr/bin/env bash
# The levers of docs/benchmarks.md, each measured in a short run of its own
# against the floors of that run (the ratios are what compares across runs).
# Reports go to .run/bench/levers/ (not committed); each run prints its ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.run/bench/levers
mkdir -p "$out"
go build -o "$out/bench-e2e" ./cmd/bench-e2e
run() {
  local name=$1; shift
  echo "== $name: $*"
  "$out/bench-e2e" -rounds "${ROUNDS:-2}" -duration "${DURATION:-3s}" -out "$out/$name.md" -chart "$out/$name.png" "$@" 2>"$out/$name.log"
}
# pgx pool: pgx's own default for 2 CPUs (4) against pgstore.DefaultMaxConns.
run pgx-pool-4 -only preview,status,degraded -db-params pool_max_conns=4
run pgx-pool-default -only preview,status,degraded
# go-redis pool: its default (10 per CPU) against a larger one.
run redis-pool-default -only replay,status
run redis-pool-64 -only replay,status -redis-params pool_size=64
# GC: the default GOGC=100 against 200 on the gateway.
run gogc-default -only preview,replay
run gogc-200 -only preview,replay -gateway-env GOGC=200
# Worker pollers: the SDK's defaults against 4 per task kind (the bare worker gets the same).
run pollers-default -only confirm-seq,confirm-conc
run pollers-4 -only confirm-seq,confirm-conc -worker-pollers 4
