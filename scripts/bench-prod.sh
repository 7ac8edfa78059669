#!/usr/bin/env bash
# make bench-e2e PROFILE=prod: the end-to-end benchmark on the production-like
# profile. Starts a profile of its own with scripts/prod.sh in
# .run-bench-prod/ on ports of its own (below), so that it collides neither
# with `make prod-up` (.run-prod/, ports 18080...) nor with the dev stack nor
# with `make test` (free ports); runs cmd/bench-e2e against it
# (-prod-stack), which writes docs/benchmarks-prod.md and
# docs/benchmarks-prod.png; stops the profile again unless it was already
# running before (BENCH_PROD_KEEP=1 leaves it up for the next run).
#
#   BENCH_ARGS   extra flags of cmd/bench-e2e, such as "-rounds 5"
#   every port variable of scripts/prod.sh, defaulting to the ones below
set -euo pipefail
cd "$(dirname "$0")/.."
export PROD_RUN_DIR=${PROD_RUN_DIR:-$PWD/.run-bench-prod}
export GATEWAY_1_URL=${GATEWAY_1_URL:-https://127.0.0.1:28080}
export GATEWAY_2_URL=${GATEWAY_2_URL:-https://127.0.0.1:28081}
export DOWNSTREAM_URL=${DOWNSTREAM_URL:-http://127.0.0.1:28090}
export TEMPORAL_ADDRESS=${TEMPORAL_ADDRESS:-127.0.0.1:27233}
export TEMPORAL_UI_URL=${TEMPORAL_UI_URL:-http://127.0.0.1:28233}
export PGPORT=${PGPORT:-26432}
export REDIS_BASE_PORT=${REDIS_BASE_PORT:-27001}
export REDIS_BUS_BASE_PORT=${REDIS_BUS_BASE_PORT:-27101}
export WORKER_METRICS_BASE_PORT=${WORKER_METRICS_BASE_PORT:-29091}

before=$(./scripts/prod.sh status)
if ! grep -q ': running' <<<"$before" && [ "${BENCH_PROD_KEEP:-0}" != 1 ]; then
  trap './scripts/prod.sh down' EXIT
fi
SECONDS=0
./scripts/prod.sh up
echo "bench-prod: the profile was up after ${SECONDS}s"
# shellcheck disable=SC2086
go run ./cmd/bench-e2e -prod-stack "${PROD_RUN_DIR#"$PWD"/}/stack.env" -out docs/benchmarks-prod.md -chart docs/benchmarks-prod.png ${BENCH_ARGS:-}
echo "bench-prod: ${SECONDS}s in all"
