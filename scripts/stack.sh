#!/usr/bin/env bash
# The one-command dev stack: `stack.sh up` starts what is not running (so it
# is idempotent and brings back a killed component), `stack.sh down` stops all,
# `stack.sh run` starts it in the foreground and stops it on Ctrl-C,
# `stack.sh status` shows what runs.
#
# State lives in .run/: stack.env, <name>.pid, <name>.log, the data of
# PostgreSQL, Redis and Temporal, and the fingerprint keys (made once).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUN=$ROOT/.run
TAG=stack
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
mkdir -p "$RUN"

COMPONENTS=(postgres redis temporal downstream worker gateway)

# ---------- configuration (every port can be moved with the variable of the same name)
GATEWAY_URL=${GATEWAY_URL:-http://127.0.0.1:8080}
DOWNSTREAM_URL=${DOWNSTREAM_URL:-http://127.0.0.1:8090}
TEMPORAL_ADDRESS=${TEMPORAL_ADDRESS:-127.0.0.1:7233}
TEMPORAL_UI_URL=${TEMPORAL_UI_URL:-http://127.0.0.1:8233}
TEMPORAL_NAMESPACE=${TEMPORAL_NAMESPACE:-default}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:16379/0}
WORKER_METRICS_URL=${WORKER_METRICS_URL:-http://127.0.0.1:9091/metrics}

db_of() { # postgres url -> database name
  local s=${1#*://}; s=${s#*/}; echo "${s%%\?*}"
}
# The dev stack runs one PostgreSQL, on the port of DATABASE_URL when that
# is given (else PGPORT, else 15432). The simulator's database lives on that
# same server unless SIMULATOR_DATABASE_URL says otherwise, so moving
# DATABASE_URL alone never points the simulator at another stack's server.
if [ -n "${DATABASE_URL:-}" ]; then
  PGPORT=$(port_of "$DATABASE_URL")
else
  PGPORT=${PGPORT:-15432}
  DATABASE_URL=postgres://postgres@127.0.0.1:${PGPORT}/oncegate?sslmode=disable
fi
SIMULATOR_DATABASE_URL=${SIMULATOR_DATABASE_URL:-postgres://postgres@127.0.0.1:${PGPORT}/oncegate_sim?sslmode=disable}
REDIS_PORT=$(port_of "$REDIS_URL")
TEMPORAL_PORT=$(port_of "$TEMPORAL_ADDRESS")
TEMPORAL_UI_PORT=$(port_of "$TEMPORAL_UI_URL")

if [ ! -s "$RUN/fingerprint.keys" ]; then
  umask 077
  echo "dev-$(date +%Y%m%d):$(head -c 32 /dev/urandom | base64 -w0)" >"$RUN/fingerprint.keys"
  umask 022
fi
ONCEGATE_FINGERPRINT_KEYS=${ONCEGATE_FINGERPRINT_KEYS:-$(cat "$RUN/fingerprint.keys")}
# The secret the simulator signs its payout webhooks with, and the gateway
# verifies them with (the dev catalog's payments.payout webhook.secret_env).
if [ ! -s "$RUN/payout-webhook.secret" ]; then
  umask 077
  head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' >"$RUN/payout-webhook.secret"
  umask 022
fi
ONCEGATE_PAYOUT_WEBHOOK_SECRET=${ONCEGATE_PAYOUT_WEBHOOK_SECRET:-$(cat "$RUN/payout-webhook.secret")}

# stack.env: `export KEY=value` lines, so that `source .run/stack.env` passes
# them on to the commands a user runs next. A value with characters the shell
# would interpret is single-quoted.
# The dev stack's environment: its token file and generated keys are
# accepted only here (a deployment refuses them).
ONCEGATE_ENV=dev
# The simulator also serves its tools over MCP (the dev catalog's
# payments.mcp_* actions call them).
DOWNSTREAM_MCP_URL=$DOWNSTREAM_URL/mcp
ENV_KEYS=(ONCEGATE_ENV GATEWAY_URL DOWNSTREAM_URL DOWNSTREAM_MCP_URL TEMPORAL_ADDRESS TEMPORAL_UI_URL TEMPORAL_NAMESPACE DATABASE_URL
  SIMULATOR_DATABASE_URL REDIS_URL WORKER_METRICS_URL ONCEGATE_FINGERPRINT_KEYS ONCEGATE_CATALOG ONCEGATE_TOKENS
  ONCEGATE_LIMITS ONCEGATE_PAYOUT_WEBHOOK_SECRET)
ONCEGATE_CATALOG=$ROOT/deployments/catalog.dev.yaml
ONCEGATE_TOKENS=$ROOT/deployments/tokens.dev.yaml
# bob's spend budgets and request rates; alice has none (README, "Limits").
ONCEGATE_LIMITS=${ONCEGATE_LIMITS:-$ROOT/deployments/limits.dev.yaml}

shell_quote() { # value -> itself when plain, else in single quotes
  if [[ $1 =~ ^[A-Za-z0-9_./:@+=,%-]*$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}

write_env() {
  local k
  {
    echo "# Written by scripts/stack.sh up. Use it with: source .run/stack.env"
    for k in "${ENV_KEYS[@]}"; do
      printf 'export %s=%s\n' "$k" "$(shell_quote "${!k}")"
    done
  } >"$RUN/stack.env.tmp"
  mv "$RUN/stack.env.tmp" "$RUN/stack.env"
}

# ---------- process helpers
wait_tcp() { # port seconds name
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "stack: $3 did not open port $1 in $2s; see $RUN/$3.log" >&2
  tail -n 20 "$RUN/$3.log" >&2 || true
  return 1
}

wait_http() { # url seconds name
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "stack: $3 did not answer $1 in $2s; see $RUN/$3.log" >&2
  tail -n 20 "$RUN/$3.log" >&2 || true
  return 1
}


# PostgreSQL refuses to run as root, and the postgres user may not be able to
# traverse the checkout's parent folders: then the data lives in a folder of
# its own under /var/tmp and .run/postgres links to it.
start_postgres() {
  start_postmaster
  ensure_databases "$(db_of "$DATABASE_URL")" "$(db_of "$SIMULATOR_DATABASE_URL")"
}

start_redis() {
  mkdir -p "$RUN/redis"
  spawn redis redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$RUN/redis" \
    --appendonly yes --save "" --daemonize no --protected-mode no
  wait_tcp "$REDIS_PORT" 30 redis
}

start_temporal() {
  spawn temporal "$ROOT/bin/temporal" server start-dev --ip 127.0.0.1 \
    --port "$TEMPORAL_PORT" --ui-port "$TEMPORAL_UI_PORT" \
    --namespace "$TEMPORAL_NAMESPACE" \
    --db-filename "$RUN/temporal.db" \
    --search-attribute IdemState=Keyword --search-attribute IdemScope=Keyword --search-attribute IdemSubject=Keyword \
    --log-level warn
  wait_tcp "$TEMPORAL_PORT" 90 temporal
  wait_http "$TEMPORAL_UI_URL" 60 temporal
}

start_binary() { # name
  # shellcheck disable=SC1091
  . "$RUN/stack.env"
  spawn "$1" "$ROOT/bin/$1"
}

start_downstream() { start_binary downstream; wait_http "$DOWNSTREAM_URL/healthz" 30 downstream; }
start_worker() {
  start_binary worker
  sleep 1
  alive worker || { echo "stack: worker exited; see $RUN/worker.log" >&2; tail -n 20 "$RUN/worker.log" >&2; return 1; }
}
start_gateway() {
  start_binary gateway
  wait_http "$GATEWAY_URL/healthz" 30 gateway
  # The simulator reports settled payouts to the gateway's webhook.
  curl -fsS -X PUT "$DOWNSTREAM_URL/_sim/webhook" -H 'Content-Type: application/json' \
    -d "{\"url\":\"$GATEWAY_URL/v1/webhooks/payments.payout\",\"secret\":\"$ONCEGATE_PAYOUT_WEBHOOK_SECRET\"}" >/dev/null
}

build() {
  ./scripts/deps.sh
  go build -o bin/ ./cmd/gateway ./cmd/worker ./cmd/downstream ./cmd/oncegate-ops
}

up() {
  if [ "$(port_of "$SIMULATOR_DATABASE_URL")" != "$PGPORT" ]; then
    echo "stack: SIMULATOR_DATABASE_URL ($SIMULATOR_DATABASE_URL) is not on the stack's PostgreSQL (port $PGPORT, from DATABASE_URL or PGPORT)" >&2
    return 2
  fi
  build
  write_env
  local c
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then
      echo "stack: $c already running (pid $(cat "$RUN/$c.pid"))"
    else
      echo "stack: starting $c"
      "start_$c"
    fi
  done
  cat <<EOF

oncegate is up.
  gateway       $GATEWAY_URL
  downstream    $DOWNSTREAM_URL
  Temporal UI   $TEMPORAL_UI_URL
  environment   $RUN/stack.env   logs: $RUN/<name>.log
EOF
}

status() { component_status; }

# run: the stack in the foreground. Ctrl-C (also while it starts) stops every
# component and the log follower: bash starts a script's background commands
# with SIGINT ignored, so the follower is stopped by its pid.
TAIL_PID=
stop_run() {
  trap - INT TERM HUP EXIT
  echo
  if [ -n "$TAIL_PID" ]; then
    kill "$TAIL_PID" 2>/dev/null || true
    wait "$TAIL_PID" 2>/dev/null || true
  fi
  down
}
run() {
  trap 'stop_run; exit 0' INT TERM HUP
  trap 'stop_run' EXIT
  up
  echo "Following the logs; Ctrl-C stops the stack."
  tail -n 0 -F "$RUN"/{gateway,worker,downstream}.log &
  TAIL_PID=$!
  wait "$TAIL_PID"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  run) run ;;
  status) status ;;
  *) echo "usage: $0 up|down|run|status" >&2; exit 2 ;;
esac
