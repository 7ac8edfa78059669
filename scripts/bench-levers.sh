#!/usr/bin/env bash
# The levers of docs/benchmarks.md. Each runs as a twin: a second gateway and
# worker with the lever, on the same stores and Temporal server, measured in
# the same alternating rounds as the stack's own pair. Eager activity
# execution is server-wide (on by default: testenv.DevServerDynamicConfig), so
# its contrast is a run of its own with it off (compare its ratios to the bare
# workflow with those of a default run). Reports go to
# .run/bench/levers/ (not committed); each run prints its ratios.
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
run pgx-pool-16 -only preview,replay,status -twin "pgx pool_max_conns=16 (default: 4 on 2 CPUs)" -twin-db-params pool_max_conns=16
run redis-pool-64 -only replay,status -twin "go-redis pool_size=64 (default: 20 on 2 CPUs)" -twin-redis-params pool_size=64
run gogc-200 -only preview,replay -twin "GOGC=200 on the gateway" -twin-gateway-env GOGC=200
run pollers-8 -only confirm-seq,confirm-conc -twin "8 worker pollers per task kind (SDK default: 2)" -twin-worker-pollers 8
run no-eager-activities -only confirm-seq,confirm-conc -temporal-dynamic-config system.enableActivityEagerExecution=false
