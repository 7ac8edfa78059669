#!/usr/bin/env bash
# The one-command dev stack: `stack.sh up` starts what is not running (so it
# is idempotent and brings back a killed component), `stack.sh down` stops all,
# `stack.sh run` starts it in the foreground and stops it on Ctrl-C,
# `stack.sh status` shows what runs, `stack.sh clean` stops it and forgets
# everything it kept.
#
# All state of a stack lives in its run folder, .run/ (ONCEGATE_RUN_DIR
# moves it): stack.env, <name>.pid, <name>.log, the data of PostgreSQL,
# Redis and Temporal, and the fingerprint and receipt keys (made once). The one
# exception is PostgreSQL's data when, as root, the postgres user cannot
# enter the run folder: then they live in /var/tmp/oncegate-stack-<hash of
# the run folder's path> (see outside_dir in lib.sh), which clean removes too.
#
# A stack is what its stack.env recorded: its addresses come from there
# unless the caller sets the variable, and a running stack is never moved
# (the caller's other value is refused, naming the stack).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
ROOT=$PWD
RUN=${ONCEGATE_RUN_DIR:-$ROOT/.run}
mkdir -p "$RUN"
RUN=$(cd "$RUN" && pwd -P)
TAG=stack
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"

COMPONENTS=(postgres redis temporal downstream worker gateway)

# OIDC=1 (make up OIDC=1) runs the stack against a real identity provider:
# Ory Hydra, started by cmd/oidc-dev as the component hydra (before the
# gateway), with the dev clients registered (docs/identity.md). The gateway
# then accepts Hydra's tokens besides the dev tokens. A stack started so
# stays so: its stack.env records HYDRA_URL.
if [ -z "${OIDC:-}" ] && [ -s "$RUN/stack.env" ] && grep -q '^export HYDRA_URL=' "$RUN/stack.env"; then
  OIDC=1
fi
if [ "${OIDC:-}" = 1 ]; then
  COMPONENTS=(postgres redis temporal hydra downstream worker gateway)
fi

# ---------- configuration
# The variables that say where a stack is (every port can be moved with the
# variable of the same name). Each comes from, in order: the caller's
# environment, the stack.env of the stack this run folder holds, the default.
ADDRESS_KEYS=(GATEWAY_URL DOWNSTREAM_URL TEMPORAL_ADDRESS TEMPORAL_UI_URL TEMPORAL_NAMESPACE DATABASE_URL
  SIMULATOR_DATABASE_URL REDIS_URL WORKER_METRICS_URL HYDRA_URL HYDRA_ADMIN_URL HYDRA_CONSENT_URL)
declare -A DEFAULT=(
  [GATEWAY_URL]=http://127.0.0.1:8080
  [DOWNSTREAM_URL]=http://127.0.0.1:8090
  [TEMPORAL_ADDRESS]=127.0.0.1:7233
  [TEMPORAL_UI_URL]=http://127.0.0.1:8233
  [TEMPORAL_NAMESPACE]=default
  [REDIS_URL]=redis://127.0.0.1:16379/0
  [WORKER_METRICS_URL]=http://127.0.0.1:9091/metrics
  [HYDRA_URL]=http://127.0.0.1:4444
  [HYDRA_ADMIN_URL]=http://127.0.0.1:4445
  [HYDRA_CONSENT_URL]=http://127.0.0.1:4446
)
pg_url() { # port database -> the stack's PostgreSQL URL of that database
  echo "postgres://postgres@127.0.0.1:$1/$2?sslmode=disable"
}
db_of() { # postgres url -> database name
  local s=${1#*://}; s=${s#*/}; echo "${s%%\?*}"
}

# What the caller set. PGPORT alone stands for DATABASE_URL on that port.
declare -A CALLER=()
for k in "${ADDRESS_KEYS[@]}"; do
  if [ -n "${!k:-}" ]; then CALLER[$k]=${!k}; fi
done
if [ -z "${CALLER[DATABASE_URL]:-}" ] && [ -n "${PGPORT:-}" ]; then
  CALLER[DATABASE_URL]=$(pg_url "$PGPORT" oncegate)
fi

# What the stack in this run folder recorded (nothing for a new one).
declare -A RECORDED=()
if [ -s "$RUN/stack.env" ]; then
  for k in "${ADDRESS_KEYS[@]}"; do
    v=$(unset "$k"; . "$RUN/stack.env" >/dev/null 2>&1; printf '%s' "${!k:-}")
    if [ -n "$v" ]; then RECORDED[$k]=$v; fi
  done
fi

running_components() { # the components whose pid file names a live process
  local c
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then printf '%s ' "$c"; fi
  done
}

# stack_name: how messages name this stack.
stack_name() {
  echo "the stack in $RUN (gateway $GATEWAY_URL)"
}

# refuse_moving_a_running_stack: a caller's value that differs from what a
# running stack recorded would start components that join another stack's
# stores (or print another stack's URLs): refused, naming both.
refuse_moving_a_running_stack() {
  local k running diff=()
  running=$(running_components)
  running=${running% }
  [ -n "$running" ] || return 0
  for k in "${ADDRESS_KEYS[@]}"; do
    if [ -n "${CALLER[$k]:-}" ] && [ -n "${RECORDED[$k]:-}" ] && [ "${CALLER[$k]}" != "${RECORDED[$k]}" ]; then
      diff+=("$k=${CALLER[$k]} (the running stack has ${RECORDED[$k]})")
    fi
  done
  for k in ONCEGATE_FINGERPRINT_KEYS ONCEGATE_RECEIPT_KEYS ONCEGATE_PAYOUT_WEBHOOK_SECRET; do # secrets: not printed
    if [ -n "${CALLER[$k]:-}" ] && [ -n "${RECORDED[$k]:-}" ] && [ "${CALLER[$k]}" != "${RECORDED[$k]}" ]; then
      diff+=("$k (another value than the running stack's)")
    fi
  done
  [ ${#diff[@]} -gt 0 ] || return 0
  {
    echo "stack: refusing to move the running stack in $RUN (gateway ${RECORDED[GATEWAY_URL]:-?}; running: $running):"
    for k in "${diff[@]}"; do echo "  $k"; done
    echo "Unset these variables to act on that stack (make up reads $RUN/stack.env by itself),"
    echo "run make down first to move it, or give another stack its own run folder (ONCEGATE_RUN_DIR) or checkout."
  } >&2
  exit 2
}

for k in "${ADDRESS_KEYS[@]}"; do
  if [ -n "${CALLER[$k]:-}" ]; then
    printf -v "$k" '%s' "${CALLER[$k]}"
  elif [ -n "${RECORDED[$k]:-}" ] && { [ "$k" != SIMULATOR_DATABASE_URL ] || [ -z "${CALLER[DATABASE_URL]:-}" ]; }; then
    # (a moved DATABASE_URL moves the simulator's database with it)
    printf -v "$k" '%s' "${RECORDED[$k]}"
  elif [ -n "${DEFAULT[$k]:-}" ]; then
    printf -v "$k" '%s' "${DEFAULT[$k]}"
  fi
done
# The dev stack runs one PostgreSQL, on the port of DATABASE_URL. The
# simulator's database lives on that same server unless
# SIMULATOR_DATABASE_URL says otherwise.
DATABASE_URL=${DATABASE_URL:-$(pg_url 15432 oncegate)}
PGPORT=$(port_of "$DATABASE_URL")
SIMULATOR_DATABASE_URL=${SIMULATOR_DATABASE_URL:-$(pg_url "$PGPORT" oncegate_sim)}
REDIS_PORT=$(port_of "$REDIS_URL")
TEMPORAL_PORT=$(port_of "$TEMPORAL_ADDRESS")
TEMPORAL_UI_PORT=$(port_of "$TEMPORAL_UI_URL")
export GATEWAY_URL DOWNSTREAM_URL TEMPORAL_ADDRESS TEMPORAL_UI_URL TEMPORAL_NAMESPACE DATABASE_URL \
  SIMULATOR_DATABASE_URL REDIS_URL WORKER_METRICS_URL

# keep_once file command...: the secrets are made once; a file that holds
# one keeps it (readable by this user only).
keep_once() {
  local file=$1
  shift
  if [ ! -s "$file" ]; then
    umask 077
    "$@" >"$file"
    umask 022
  fi
}
random_b64() { head -c 32 /dev/urandom | base64 -w0; }
random_b64url() { random_b64 | tr '+/' '-_'; }
keep_once "$RUN/fingerprint.keys" echo "dev-$(date +%Y%m%d):$(random_b64)"
CALLER_KEYS=${ONCEGATE_FINGERPRINT_KEYS:-}
ONCEGATE_FINGERPRINT_KEYS=${ONCEGATE_FINGERPRINT_KEYS:-$(cat "$RUN/fingerprint.keys")}
# The receipt key: the 32-byte seed of an Ed25519 key (its dev- id is
# refused outside the dev stack).
keep_once "$RUN/receipt.keys" echo "dev-receipt-$(date +%Y%m%d):$(random_b64)"
CALLER_RECEIPT_KEYS=${ONCEGATE_RECEIPT_KEYS:-}
ONCEGATE_RECEIPT_KEYS=${ONCEGATE_RECEIPT_KEYS:-$(cat "$RUN/receipt.keys")}
# The secret the simulator signs its payout webhooks with, and the gateway
# verifies them with (the dev catalog's payments.payout webhook.secret_env).
keep_once "$RUN/payout-webhook.secret" random_b64url
CALLER_WEBHOOK_SECRET=${ONCEGATE_PAYOUT_WEBHOOK_SECRET:-}
ONCEGATE_PAYOUT_WEBHOOK_SECRET=${ONCEGATE_PAYOUT_WEBHOOK_SECRET:-$(cat "$RUN/payout-webhook.secret")}
if [ -s "$RUN/stack.env" ]; then
  for k in ONCEGATE_FINGERPRINT_KEYS ONCEGATE_RECEIPT_KEYS ONCEGATE_PAYOUT_WEBHOOK_SECRET; do
    v=$(unset "$k"; . "$RUN/stack.env" >/dev/null 2>&1; printf '%s' "${!k:-}")
    if [ -n "$v" ]; then RECORDED[$k]=$v; fi
  done
fi
[ -z "$CALLER_KEYS" ] || CALLER[ONCEGATE_FINGERPRINT_KEYS]=$CALLER_KEYS
[ -z "$CALLER_RECEIPT_KEYS" ] || CALLER[ONCEGATE_RECEIPT_KEYS]=$CALLER_RECEIPT_KEYS
[ -z "$CALLER_WEBHOOK_SECRET" ] || CALLER[ONCEGATE_PAYOUT_WEBHOOK_SECRET]=$CALLER_WEBHOOK_SECRET

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
  SIMULATOR_DATABASE_URL REDIS_URL WORKER_METRICS_URL ONCEGATE_FINGERPRINT_KEYS ONCEGATE_RECEIPT_KEYS ONCEGATE_CATALOG ONCEGATE_TOKENS
  ONCEGATE_LIMITS ONCEGATE_PAYOUT_WEBHOOK_SECRET)
ONCEGATE_CATALOG=$ROOT/deployments/catalog.dev.yaml
ONCEGATE_TOKENS=$ROOT/deployments/tokens.dev.yaml
# bob's spend budgets and request rates; alice has none (docs/operators.md, "Limits").
ONCEGATE_LIMITS=${ONCEGATE_LIMITS:-$ROOT/deployments/limits.dev.yaml}
if [ "${OIDC:-}" = 1 ]; then
  # The gateway's OIDC settings for Hydra (operators are those granted the
  # scope oncegate:operator; the MCP endpoint needs oncegate:mcp), and the
  # dev clients' credentials (secrets made once).
  keep_once "$RUN/oidc-agent.secret" random_b64url
  keep_once "$RUN/oidc-operator.secret" random_b64url
  ONCEGATE_OIDC_ISSUER=$HYDRA_URL
  ONCEGATE_OIDC_AUDIENCE=$GATEWAY_URL/v1
  ONCEGATE_OIDC_ROLES_CLAIM=scp
  ONCEGATE_OIDC_OPERATOR_ROLE=oncegate:operator
  ONCEGATE_MCP_SCOPES=oncegate:mcp
  # The MCP endpoint's canonical URI: the gateway's public URL (localhost
  # for a loopback GATEWAY_URL) + /mcp, as the gateway derives it.
  ONCEGATE_MCP_RESOURCE=$(echo "$GATEWAY_URL" | sed -E 's#^(https?://)(127\.0\.0\.1|0\.0\.0\.0)#\1localhost#')/mcp
  HYDRA_AGENT_CLIENT_ID=agent-alice
  HYDRA_AGENT_CLIENT_SECRET=$(cat "$RUN/oidc-agent.secret")
  HYDRA_OPERATOR_CLIENT_ID=ops-olga
  HYDRA_OPERATOR_CLIENT_SECRET=$(cat "$RUN/oidc-operator.secret")
  HYDRA_CONSOLE_CLIENT_ID=ops-console
  HYDRA_CONSOLE_REDIRECT_URI=http://localhost:8976/callback
  ENV_KEYS+=(HYDRA_URL HYDRA_ADMIN_URL HYDRA_CONSENT_URL ONCEGATE_OIDC_ISSUER ONCEGATE_OIDC_AUDIENCE ONCEGATE_OIDC_ROLES_CLAIM
    ONCEGATE_OIDC_OPERATOR_ROLE ONCEGATE_MCP_SCOPES ONCEGATE_MCP_RESOURCE HYDRA_AGENT_CLIENT_ID HYDRA_AGENT_CLIENT_SECRET
    HYDRA_OPERATOR_CLIENT_ID HYDRA_OPERATOR_CLIENT_SECRET HYDRA_CONSOLE_CLIENT_ID HYDRA_CONSOLE_REDIRECT_URI)
fi

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
    echo "# Written by scripts/stack.sh up. Use it with: source $RUN/stack.env"
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

# DEV_DYNAMIC_CONFIG is the dev server's dynamic configuration (KEY=VALUE,
# the CLI's --dynamic-config-value), the same as the tests' servers (why each:
# testenv.DevServerDynamicConfig): eager activity execution hands the worker
# that completes a workflow task the activity it schedules, without a
# dispatch through matching; one partition per task queue spares a task the
# delay of its forwarding from a partition no poller waits on; the history
# queues' readers read the one shard's tasks 1000 times a second, not 20;
# search attributes come from the server's cache, as on a production server
# (ours are registered at start), not from the database at every read.
DEV_DYNAMIC_CONFIG=(
  system.enableActivityEagerExecution=true
  matching.numTaskqueueReadPartitions=1
  matching.numTaskqueueWritePartitions=1
  history.transferProcessorMaxPollRPS=1000
  history.timerProcessorMaxPollRPS=1000
  history.visibilityProcessorMaxPollRPS=1000
  system.forceSearchAttributesCacheRefreshOnRead=false
)

# DEV_SQLITE_PRAGMAS are the dev server's SQLite settings for .run/temporal.db:
# a write-ahead log, synced at checkpoints rather than at every commit. A
# killed server keeps every committed transaction (they are in the log); only
# the machine's own crash could lose the last ones, which a dev stack can
# afford. With SQLite's defaults (a rollback journal, two syncs per commit) a
# first confirm took 108 ms at the median on this stack; with these, 54 ms.
DEV_SQLITE_PRAGMAS=(
  journal_mode=wal
  synchronous=normal
)

start_temporal() {
  local settings=() kv
  for kv in "${DEV_DYNAMIC_CONFIG[@]}"; do settings+=(--dynamic-config-value "$kv"); done
  for kv in "${DEV_SQLITE_PRAGMAS[@]}"; do settings+=(--sqlite-pragma "$kv"); done
  spawn temporal "$ROOT/bin/temporal" server start-dev --ip 127.0.0.1 \
    --port "$TEMPORAL_PORT" --ui-port "$TEMPORAL_UI_PORT" \
    --namespace "$TEMPORAL_NAMESPACE" \
    --db-filename "$RUN/temporal.db" \
    --search-attribute IdemState=Keyword --search-attribute IdemScope=Keyword --search-attribute IdemSubject=Keyword \
    "${settings[@]}" --log-level warn
  wait_tcp "$TEMPORAL_PORT" 90 temporal
  wait_http "$TEMPORAL_UI_URL" 60 temporal
}

start_binary() { # name
  # shellcheck disable=SC1091
  . "$RUN/stack.env"
  spawn "$1" "$ROOT/bin/$1"
}

start_hydra() {
  # shellcheck disable=SC1091
  . "$RUN/stack.env"
  export ONCEGATE_RUN_DIR=$RUN # oidc-dev keeps Hydra's own log under it
  spawn hydra "$ROOT/bin/oidc-dev"
  wait_http "$HYDRA_URL/.well-known/openid-configuration" 120 hydra
  wait_http "$HYDRA_ADMIN_URL/admin/clients/$HYDRA_AGENT_CLIENT_ID" 60 hydra
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
  if [ "${OIDC:-}" = 1 ]; then go build -o bin/ ./cmd/oidc-dev; fi
}

# say_which: tells which stack this command acts on, and why.
say_which() {
  if [ ${#RECORDED[@]} -gt 0 ]; then
    echo "stack: acting on the stack recorded in $RUN/stack.env (gateway $GATEWAY_URL)"
  else
    echo "stack: a new stack in $RUN (gateway $GATEWAY_URL)"
  fi
}

# ports_of component: "port variable value" lines of what it listens on.
ports_of() {
  case $1 in
    postgres) echo "$PGPORT DATABASE_URL $DATABASE_URL" ;;
    redis) echo "$REDIS_PORT REDIS_URL $REDIS_URL" ;;
    temporal)
      echo "$TEMPORAL_PORT TEMPORAL_ADDRESS $TEMPORAL_ADDRESS"
      echo "$TEMPORAL_UI_PORT TEMPORAL_UI_URL $TEMPORAL_UI_URL"
      ;;
    downstream) echo "$(port_of "$DOWNSTREAM_URL") DOWNSTREAM_URL $DOWNSTREAM_URL" ;;
    worker) echo "$(port_of "$WORKER_METRICS_URL") WORKER_METRICS_URL $WORKER_METRICS_URL" ;;
    gateway) echo "$(port_of "$GATEWAY_URL") GATEWAY_URL $GATEWAY_URL" ;;
    hydra)
      echo "$(port_of "$HYDRA_URL") HYDRA_URL $HYDRA_URL"
      echo "$(port_of "$HYDRA_ADMIN_URL") HYDRA_ADMIN_URL $HYDRA_ADMIN_URL"
      echo "$(port_of "$HYDRA_CONSENT_URL") HYDRA_CONSENT_URL $HYDRA_CONSENT_URL"
      ;;
  esac
}

up() {
  refuse_moving_a_running_stack
  say_which
  if [ "$(port_of "$SIMULATOR_DATABASE_URL")" != "$PGPORT" ]; then
    echo "stack: SIMULATOR_DATABASE_URL ($SIMULATOR_DATABASE_URL) is not on the stack's PostgreSQL (port $PGPORT, from DATABASE_URL or PGPORT)" >&2
    return 2
  fi
  local c port var val
  # Every port a component to start needs must be free: another process
  # there (another stack, a system service) is named with its variable.
  for c in "${COMPONENTS[@]}"; do
    alive "$c" && continue
    while read -r port var val; do
      require_free_port "$c" "$port" "$var" "$val"
    done < <(ports_of "$c")
  done
  build
  write_env
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then
      echo "stack: $c already running (pid $(cat "$RUN/$c.pid"))"
    else
      echo "stack: starting $c"
      "start_$c"
    fi
  done
  cat <<EOF

oncegate is up: the stack in $RUN
  gateway       $GATEWAY_URL
  downstream    $DOWNSTREAM_URL
  Temporal UI   $TEMPORAL_UI_URL
  environment   $RUN/stack.env   logs: $RUN/<name>.log
EOF
  if [ "${OIDC:-}" = 1 ]; then
    echo "  Hydra         $HYDRA_URL (admin $HYDRA_ADMIN_URL): clients \$HYDRA_AGENT_CLIENT_ID, \$HYDRA_OPERATOR_CLIENT_ID (docs/identity.md)"
  fi
}

# clean: stop the stack and forget everything it kept.
clean() {
  echo "stack: stopping and forgetting $(stack_name)"
  down
  forget_state
}

# status: one line per component; exits 3 (LSB's "not running") when one is
# stopped, so that a script can ask whether the whole stack runs.
status() {
  component_status
  local c
  for c in "${COMPONENTS[@]}"; do alive "$c" || return 3; done
}

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
  down) echo "stack: stopping $(stack_name)"; down ;;
  run) run ;;
  status) echo "$(stack_name):"; status ;;
  clean) clean ;;
  *) echo "usage: $0 up|down|run|status|clean" >&2; exit 2 ;;
esac
