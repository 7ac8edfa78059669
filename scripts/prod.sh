#!/usr/bin/env bash
# The production-like profile (docs/contract.md §1b), on this machine, without
# containers: a Temporal server built from go.temporal.io/server with
# persistence and SQL visibility on PostgreSQL, the Temporal Web UI
# (ui-server), a Redis Cluster (3 masters, 3 replicas), 2 gateways and 2
# workers, and the downstream simulator.
#
#   prod.sh up      start what is not running (idempotent: brings back a killed component)
#   prod.sh down    stop everything
#   prod.sh status  show what runs
#   prod.sh build   only build the binaries (Temporal server, SQL tool, UI server, oncegate)
#   prod.sh start NAME...  start the named components that are not running, without
#                   building (the crash tests bring back what they killed with it)
#   prod.sh clean   stop everything and forget what the profile kept (.run-prod/
#                   and its PostgreSQL folder under /var/tmp, if any)
#
# State lives in .run-prod/: stack.env, <name>.pid, <name>.log, the data of
# PostgreSQL and the Redis nodes, the profile's fingerprint and receipt keys
# and tokens.
# Binaries are cached in bin/ (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUN=$ROOT/.run-prod
TAG=prod
STOP_WAIT=150
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
BIN=$ROOT/bin
mkdir -p "$RUN"

TEMPORAL_SERVER_VERSION=v1.29.1
TEMPORAL_UI_SERVER_VERSION=v2.42.1 # the UI the Temporal CLI v1.5.1 embeds

# ---------- configuration (every port can be moved with the variable of the same name)
GATEWAY_1_URL=${GATEWAY_1_URL:-http://127.0.0.1:18080}
GATEWAY_2_URL=${GATEWAY_2_URL:-http://127.0.0.1:18081}
DOWNSTREAM_URL=${DOWNSTREAM_URL:-http://127.0.0.1:18090}
TEMPORAL_ADDRESS=${TEMPORAL_ADDRESS:-127.0.0.1:17233}
TEMPORAL_UI_URL=${TEMPORAL_UI_URL:-http://127.0.0.1:18233}
TEMPORAL_NAMESPACE=${TEMPORAL_NAMESPACE:-default}
PGPORT=${PGPORT:-16432}
REDIS_NODES=${REDIS_NODES:-6}       # masters + replicas
REDIS_REPLICAS=${REDIS_REPLICAS:-1} # replicas per master
REDIS_BASE_PORT=${REDIS_BASE_PORT:-17001}
REDIS_BUS_BASE_PORT=${REDIS_BUS_BASE_PORT:-17101}
# worker-N serves Prometheus metrics on WORKER_METRICS_BASE_PORT + N - 1.
WORKER_METRICS_BASE_PORT=${WORKER_METRICS_BASE_PORT:-19091}
WORKER_METRICS_URL=http://127.0.0.1:${WORKER_METRICS_BASE_PORT}/metrics
REDIS_NODE_TIMEOUT_MS=${REDIS_NODE_TIMEOUT_MS:-3000}

TEMPORAL_PORT=$(port_of "$TEMPORAL_ADDRESS")
TEMPORAL_UI_PORT=$(port_of "$TEMPORAL_UI_URL")
# The Temporal server's other ports sit at fixed offsets from the frontend's.
export TEMPORAL_FRONTEND_PORT=$TEMPORAL_PORT
export TEMPORAL_FRONTEND_HTTP_PORT=$((TEMPORAL_PORT + 10))
export TEMPORAL_HISTORY_PORT=$((TEMPORAL_PORT + 1))
export TEMPORAL_MATCHING_PORT=$((TEMPORAL_PORT + 2))
export TEMPORAL_WORKER_PORT=$((TEMPORAL_PORT + 6))
export TEMPORAL_FRONTEND_MEMBERSHIP_PORT=$((TEMPORAL_PORT - 300))
export TEMPORAL_HISTORY_MEMBERSHIP_PORT=$((TEMPORAL_PORT - 299))
export TEMPORAL_MATCHING_MEMBERSHIP_PORT=$((TEMPORAL_PORT - 298))
export TEMPORAL_WORKER_MEMBERSHIP_PORT=$((TEMPORAL_PORT - 294))
export TEMPORAL_METRICS_PORT=${TEMPORAL_METRICS_PORT:-$((TEMPORAL_PORT - 233))}
export PGPORT

DATABASE_URL=postgres://postgres@127.0.0.1:${PGPORT}/oncegate?sslmode=disable
SIMULATOR_DATABASE_URL=postgres://postgres@127.0.0.1:${PGPORT}/oncegate_sim?sslmode=disable
REDIS_ADDRS=$(for ((i = 0; i < REDIS_NODES; i++)); do printf '%s127.0.0.1:%d' "$([ "$i" -gt 0 ] && echo ,)" $((REDIS_BASE_PORT + i)); done)
REDIS_URL=redis://127.0.0.1:${REDIS_BASE_PORT}/0

REDIS_COMPONENTS=()
for ((i = 1; i <= REDIS_NODES; i++)); do REDIS_COMPONENTS+=("redis-$i"); done
COMPONENTS=(postgres "${REDIS_COMPONENTS[@]}" temporal temporal-ui downstream worker-1 worker-2 gateway-1 gateway-2)

# The profile's own keys and tokens (not the dev stack's: ONCEGATE_ENV is not dev here).
umask 077
[ -s "$RUN/fingerprint.keys" ] || echo "prod-local-$(date +%Y%m%d):$(head -c 32 /dev/urandom | base64 -w0)" >"$RUN/fingerprint.keys"
# The receipt key: the 32-byte seed of an Ed25519 key. Both gateways sign with
# it, so a receipt verifies against either one's /.well-known/jwks.json.
[ -s "$RUN/receipt.keys" ] || echo "prod-local-receipt-$(date +%Y%m%d):$(head -c 32 /dev/urandom | base64 -w0)" >"$RUN/receipt.keys"
if [ ! -s "$RUN/tokens.yaml" ]; then
  {
    echo "# Tokens of the production-like profile, made once by scripts/prod.sh."
    echo "tokens:"
    echo "  alice-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'): {subject: alice, role: agent}"
    echo "  bob-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'): {subject: bob, role: agent}"
    echo "  ops-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'): {subject: ops, role: operator}"
  } >"$RUN/tokens.yaml"
fi
umask 022
token_of() { sed -n "s/^  \($1-[0-9a-f]*\):.*/\1/p" "$RUN/tokens.yaml"; }

write_env() {
  cat >"$RUN/stack.env" <<EOF
export ONCEGATE_ENV=prod-local
export GATEWAY_URL=$GATEWAY_1_URL
export GATEWAY_URLS=$GATEWAY_1_URL,$GATEWAY_2_URL
export DOWNSTREAM_URL=$DOWNSTREAM_URL
export DOWNSTREAM_MCP_URL=$DOWNSTREAM_URL/mcp
export TEMPORAL_ADDRESS=$TEMPORAL_ADDRESS
export TEMPORAL_UI_URL=$TEMPORAL_UI_URL
export TEMPORAL_NAMESPACE=$TEMPORAL_NAMESPACE
export DATABASE_URL=$DATABASE_URL
export SIMULATOR_DATABASE_URL=$SIMULATOR_DATABASE_URL
export REDIS_URL=$REDIS_URL
export REDIS_ADDRS=$REDIS_ADDRS
export WORKER_METRICS_URL=$WORKER_METRICS_URL
export ONCEGATE_FINGERPRINT_KEYS=$(cat "$RUN/fingerprint.keys")
export ONCEGATE_RECEIPT_KEYS=$(cat "$RUN/receipt.keys")
export ONCEGATE_CATALOG=$ROOT/deployments/catalog.dev.yaml
export ONCEGATE_TOKENS=$RUN/tokens.yaml
export ONCEGATE_TOKEN_ALICE=$(token_of alice)
export ONCEGATE_TOKEN_BOB=$(token_of bob)
export ONCEGATE_OPS_TOKEN=$(token_of ops)
EOF
}

# ---------- process helpers
wait_until() { # seconds name command...: poll until the command succeeds
  local secs=$1 name=$2 i
  shift 2
  for ((i = 0; i < secs * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "prod: $name not ready after ${secs}s; see $RUN/$name.log" >&2
  tail -n 30 "$RUN/$name.log" >&2 || true
  return 1
}

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---------- builds (cached in bin/)
go_install_as() { # name package@version: go install into bin/<name>
  local tmp
  tmp=$(mktemp -d)
  GOBIN=$tmp go install "$2"
  mv "$tmp"/* "$BIN/$1"
  rmdir "$tmp"
}

build() {
  ./scripts/deps.sh
  mkdir -p "$BIN"
  if ! "$BIN/temporal-server" --version 2>/dev/null | grep -q "${TEMPORAL_SERVER_VERSION#v}"; then
    echo "prod: building the Temporal server ${TEMPORAL_SERVER_VERSION} into bin/ (about 3-6 minutes, once)" >&2
    go_install_as temporal-server "go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}"
  fi
  if ! "$BIN/temporal-sql-tool" --version 2>/dev/null | grep -q "${TEMPORAL_SERVER_VERSION#v}"; then
    echo "prod: building temporal-sql-tool ${TEMPORAL_SERVER_VERSION} into bin/" >&2
    go_install_as temporal-sql-tool "go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}"
  fi
  if [ ! -x "$BIN/temporal-ui-server" ] || [ "$(cat "$BIN/.temporal-ui-server.version" 2>/dev/null)" != "$TEMPORAL_UI_SERVER_VERSION" ]; then
    echo "prod: building the Temporal UI server ${TEMPORAL_UI_SERVER_VERSION} into bin/" >&2
    go_install_as temporal-ui-server "github.com/temporalio/ui-server/v2/cmd/server@${TEMPORAL_UI_SERVER_VERSION}"
    echo "$TEMPORAL_UI_SERVER_VERSION" >"$BIN/.temporal-ui-server.version"
  fi
  go build -o "$BIN/" ./cmd/gateway ./cmd/worker ./cmd/downstream ./cmd/oncegate-ops
}

# The schema files that go.temporal.io/server ships, from the module cache.
temporal_schema_dir() {
  local dir
  dir=$(cd /tmp && go mod download -json "go.temporal.io/server@${TEMPORAL_SERVER_VERSION}" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  echo "$dir/schema/postgresql/v12"
}

# ---------- PostgreSQL: a cluster of the profile's own, run as the postgres user

# PostgreSQL refuses to run as root, and the postgres user may not be able to
# traverse the checkout's parent folders: then the data lives in a folder of
# its own under /var/tmp and .run-prod/postgres links to it.

start_postgres() {
  start_postmaster -c max_connections=300
  # Temporal's two databases, the gateway's truth and the simulator's data.
  ensure_databases temporal temporal_visibility oncegate oncegate_sim
}

# ---------- Redis Cluster
redis_port() { echo $((REDIS_BASE_PORT + $1 - 1)); } # node number (1..N) -> port

start_redis_node() { # n
  local n=$1 port dir
  port=$(redis_port "$n")
  dir=$RUN/redis-$n
  mkdir -p "$dir"
  spawn "redis-$n" redis-server --port "$port" --bind 127.0.0.1 --protected-mode no --daemonize no \
    --dir "$dir" --appendonly yes --save "" \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-port $((REDIS_BUS_BASE_PORT + n - 1)) \
    --cluster-node-timeout "$REDIS_NODE_TIMEOUT_MS"
  wait_until 30 "redis-$n" redis-cli -p "$port" ping
}

cluster_ok() { redis-cli -p "$REDIS_BASE_PORT" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; }

# Creates the cluster once (every node still knows only itself); after that
# the nodes keep the layout in their nodes.conf and a restarted node rejoins.
ensure_redis_cluster() {
  local known
  known=$(redis-cli -p "$REDIS_BASE_PORT" cluster info | sed -n 's/^cluster_known_nodes:\([0-9]*\).*/\1/p')
  if [ "$known" = 1 ]; then
    echo "prod: creating the Redis Cluster ($REDIS_NODES nodes, $REDIS_REPLICAS replica(s) per master)"
    # shellcheck disable=SC2046
    redis-cli --cluster create $(echo "$REDIS_ADDRS" | tr , ' ') --cluster-replicas "$REDIS_REPLICAS" --cluster-yes \
      >>"$RUN/redis-1.log" 2>&1
  fi
  wait_until 60 redis-1 cluster_ok
}

# ---------- Temporal
temporal_cli() { "$BIN/temporal" --address "$TEMPORAL_ADDRESS" "$@"; }

setup_temporal_schema() {
  local schema db sub
  schema=$(temporal_schema_dir)
  for db in temporal temporal_visibility; do
    sub=temporal
    [ "$db" = temporal_visibility ] && sub=visibility
    local tool=("$BIN/temporal-sql-tool" --plugin postgres12 --ep 127.0.0.1 -p "$PGPORT" -u postgres --db "$db")
    if [ "$(psql_q "SELECT to_regclass('public.schema_version') IS NOT NULL" "$db")" != t ]; then
      "${tool[@]}" setup-schema -v 0.0 >>"$RUN/temporal.log" 2>&1
    fi
    "${tool[@]}" update-schema -d "$schema/$sub/versioned" >>"$RUN/temporal.log" 2>&1
  done
}

start_temporal() {
  setup_temporal_schema
  spawn temporal "$BIN/temporal-server" --root "$ROOT" --config deployments/prod-local/temporal \
    --env prod-local --allow-no-auth start
  wait_until 120 temporal temporal_cli operator cluster health
}

# Registers the namespace and the search attributes through the operator API
# when they are missing; run on every `up`.
ensure_temporal_namespace() {
  if ! temporal_cli operator namespace describe --namespace "$TEMPORAL_NAMESPACE" >/dev/null 2>&1; then
    temporal_cli operator namespace create --namespace "$TEMPORAL_NAMESPACE" --retention 72h >>"$RUN/temporal.log" 2>&1
  fi
  # A new namespace reaches every service's cache within seconds.
  wait_until 60 temporal temporal_cli operator search-attribute list --namespace "$TEMPORAL_NAMESPACE"
  local sa have
  have=$(temporal_cli operator search-attribute list --namespace "$TEMPORAL_NAMESPACE")
  for sa in IdemState IdemScope IdemSubject; do
    grep -qw "$sa" <<<"$have" ||
      temporal_cli operator search-attribute create --namespace "$TEMPORAL_NAMESPACE" --name "$sa" --type Keyword >>"$RUN/temporal.log" 2>&1
  done
}

start_temporal-ui() {
  TEMPORAL_ADDRESS=$TEMPORAL_ADDRESS TEMPORAL_UI_PORT=$TEMPORAL_UI_PORT TEMPORAL_NAMESPACE=$TEMPORAL_NAMESPACE \
    spawn temporal-ui "$BIN/temporal-ui-server" --root "$ROOT" --config deployments/prod-local/ui --env prod-local start
  wait_until 60 temporal-ui curl -fsS -o /dev/null "$TEMPORAL_UI_URL/api/v1/settings"
}

# ---------- oncegate's binaries
start_binary() { # name binary KEY=value...: with stack.env plus the extra variables
  local name=$1 binary=$2
  shift 2
  (
    # shellcheck disable=SC1091
    . "$RUN/stack.env"
    for kv in "$@"; do export "${kv?}"; done
    spawn "$name" "$BIN/$binary"
  )
}

healthy() { curl -fsS -o /dev/null "$1/healthz"; }

start_downstream() {
  start_binary downstream downstream
  wait_until 30 downstream healthy "$DOWNSTREAM_URL"
}
start_worker() { # n
  start_binary "worker-$1" worker "WORKER_METRICS_URL=http://127.0.0.1:$((WORKER_METRICS_BASE_PORT + $1 - 1))/metrics"
  sleep 1
  alive "worker-$1" || { echo "prod: worker-$1 exited; see $RUN/worker-$1.log" >&2; tail -n 20 "$RUN/worker-$1.log" >&2; return 1; }
}
start_gateway() { # n url
  start_binary "gateway-$1" gateway "GATEWAY_URL=$2"
  wait_until 30 "gateway-$1" healthy "$2"
}

start_component() { # name
  case $1 in
    postgres) start_postgres ;;
    redis-*) start_redis_node "${1#redis-}" ;;
    temporal) start_temporal ;;
    temporal-ui) start_temporal-ui ;;
    downstream) start_downstream ;;
    worker-1 | worker-2) start_worker "${1#worker-}" ;;
    gateway-1) start_gateway 1 "$GATEWAY_1_URL" ;;
    gateway-2) start_gateway 2 "$GATEWAY_2_URL" ;;
    *) echo "prod: unknown component $1" >&2; return 1 ;;
  esac
}

up() {
  build
  write_env
  local c
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then
      echo "prod: $c already running (pid $(cat "$RUN/$c.pid"))"
    else
      echo "prod: starting $c"
      start_component "$c"
    fi
    case $c in
      "redis-$REDIS_NODES") ensure_redis_cluster ;;
      temporal) ensure_temporal_namespace ;;
    esac
  done
  cat <<EOF

oncegate (production-like profile) is up.
  gateways      $GATEWAY_1_URL $GATEWAY_2_URL
  downstream    $DOWNSTREAM_URL
  Temporal      $TEMPORAL_ADDRESS (PostgreSQL 127.0.0.1:$PGPORT), Web UI $TEMPORAL_UI_URL
  Redis Cluster $REDIS_ADDRS
  environment   $RUN/stack.env   logs: $RUN/<name>.log
EOF
}

start() { # name...
  [ -s "$RUN/stack.env" ] || { echo "prod: no $RUN/stack.env; run prod.sh up first" >&2; return 1; }
  local c
  for c in "$@"; do
    alive "$c" || start_component "$c"
  done
}

status() {
  component_status
  cluster_ok && echo "redis cluster: cluster_state:ok" || echo "redis cluster: not ok"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  build) build ;;
  start) shift; start "$@" ;;
  clean) down; forget_state ;;
  *) echo "usage: $0 up|down|status|build|start NAME...|clean" >&2; exit 2 ;;
esac
