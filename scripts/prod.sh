#!/usr/bin/env bash
# The production-like profile (docs/contract.md §1b), on this machine, without
# containers: a Temporal server built from go.temporal.io/server with
# persistence and SQL visibility on PostgreSQL, the Temporal Web UI
# (ui-server), a Redis Cluster (3 masters, 3 replicas), 2 gateways and 2
# workers, and the downstream simulator. Every hop is encrypted with
# certificates of a local CA the script makes once (.run-prod/tls): mTLS to
# the Temporal frontend (and between its services), TLS to the Redis Cluster
# (clients, replication and the cluster bus) and to PostgreSQL (verify-full
# clients; plaintext connections are refused), HTTPS on the gateways.
#
#   prod.sh up      start what is not running (idempotent: brings back a killed component)
#   prod.sh down    stop everything
#   prod.sh status  show what runs
#   prod.sh build   only build the binaries (Temporal server, SQL tool, UI server, oncegate)
#   prod.sh start NAME...  start the named components that are not running, without
#                   building (the crash tests bring back what they killed with it)
#   prod.sh backup [FILE]   a logical backup of the truth (pg_dump of the oncegate
#                   database, custom format) into FILE (default
#                   .run-prod/backups/truth-<UTC time>.dump), and FILE.since: when it was taken
#   prod.sh restore FILE    the restore drill's procedure: stop the gateways and the
#                   workers, replace the truth with FILE, empty the Redis Cluster (a cache
#                   of the truth), write back what Temporal knows since the backup
#                   (oncegate-rebuild), start the workers and the gateways again
#   prod.sh rebuild SINCE   only the write-back (oncegate-rebuild -since SINCE)
#   prod.sh clean   stop everything and forget what the profile kept (.run-prod/
#                   and its PostgreSQL folder under /var/tmp, if any)
#
# A component's own overrides: $RUN/override/NAME.env, when it exists, is
# sourced after stack.env when NAME starts (the network-fault soak points the
# processes at its proxies so: DATABASE_URL, REDIS_ADDRS, TEMPORAL_ADDRESS,
# DOWNSTREAM_URL for a gateway or a worker; PAYOUT_WEBHOOK_GATEWAY_URL for the
# simulator; REDIS_ANNOUNCE_PORT for a Redis node, the port it announces to
# the cluster's clients in MOVED and CLUSTER SLOTS; PGPORT for the Temporal
# server, where it reaches its persistence). Without it, nothing changes.
#
# State lives in .run-prod/ (PROD_RUN_DIR moves it: `make bench-e2e PROFILE=prod`
# runs its own profile in .run-bench-prod/, on ports of its own): stack.env, <name>.pid, <name>.log, the data of
# PostgreSQL and the Redis nodes, the profile's fingerprint and receipt keys
# and tokens.
# Binaries are cached in bin/ (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUN=${PROD_RUN_DIR:-$ROOT/.run-prod}
TAG=prod
STOP_WAIT=150
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
BIN=$ROOT/bin
mkdir -p "$RUN"

TEMPORAL_SERVER_VERSION=v1.29.1
TEMPORAL_UI_SERVER_VERSION=v2.42.1 # the UI the Temporal CLI v1.5.1 embeds

# ---------- configuration (every port can be moved with the variable of the same name)
GATEWAY_1_URL=${GATEWAY_1_URL:-https://127.0.0.1:18080}
GATEWAY_2_URL=${GATEWAY_2_URL:-https://127.0.0.1:18081}
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

# The profile's certificates (ensure_certs): the local CA, one server
# certificate (127.0.0.1, localhost and PUBLIC_HOST) every server presents, and
# the client certificate of mTLS to Temporal.
TLS_DIR=$RUN/tls
# Where a person's browser reaches the gateways (the approval and enrolment
# pages): a name of the profile's own under .localhost, which browsers send
# to the loopback and treat as a secure context. A deployment whose catalog
# asks for approval (the dev catalog's payments.wire) may not use the dev
# stack's "localhost" as the passkeys' relying party; the server
# certificate names it too.
PUBLIC_HOST=${PUBLIC_HOST:-oncegate.localhost}
export PROD_TLS_DIR=$TLS_DIR # read by the Temporal server's and the UI's config templates
CA_FILE=$TLS_DIR/ca.pem
PG_TLS="sslmode=verify-full&sslrootcert=$CA_FILE"
DATABASE_URL="postgres://postgres@127.0.0.1:${PGPORT}/oncegate?$PG_TLS"
SIMULATOR_DATABASE_URL="postgres://postgres@127.0.0.1:${PGPORT}/oncegate_sim?$PG_TLS"
REDIS_ADDRS=$(for ((i = 0; i < REDIS_NODES; i++)); do printf '%s127.0.0.1:%d' "$([ "$i" -gt 0 ] && echo ,)" $((REDIS_BASE_PORT + i)); done)
REDIS_URL=rediss://127.0.0.1:${REDIS_BASE_PORT}/0

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
# The secret the simulator signs its payout webhooks with, and the gateways
# verify them with (the dev catalog's payments.payout webhook.secret_env).
[ -s "$RUN/payout-webhook.secret" ] || head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' >"$RUN/payout-webhook.secret"
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
export TEMPORAL_METRICS_URL=http://127.0.0.1:$TEMPORAL_METRICS_PORT/metrics
export DATABASE_URL='$DATABASE_URL'
export SIMULATOR_DATABASE_URL='$SIMULATOR_DATABASE_URL'
export REDIS_URL=$REDIS_URL
export REDIS_ADDRS=$REDIS_ADDRS
export REDIS_TLS_CA_FILE=$CA_FILE
export TEMPORAL_TLS_CA_FILE=$CA_FILE
export TEMPORAL_TLS_CERT_FILE=$TLS_DIR/client.pem
export TEMPORAL_TLS_KEY_FILE=$TLS_DIR/client-key.pem
export ONCEGATE_CA_FILE=$CA_FILE
export ONCEGATE_PAYOUT_WEBHOOK_SECRET=$(cat "$RUN/payout-webhook.secret")
export ONCEGATE_PUBLIC_URL=https://$PUBLIC_HOST:$(port_of "$GATEWAY_1_URL")
export ONCEGATE_WEBAUTHN_ORIGINS=https://$PUBLIC_HOST:$(port_of "$GATEWAY_1_URL"),https://$PUBLIC_HOST:$(port_of "$GATEWAY_2_URL")
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
# wait_until seconds name command...: polls until the command succeeds, for
# at most that many seconds of wall time (a check that is slow itself, such
# as a CLI against a server that is not up, does not stretch it); gives up at
# once when the component's process has exited.
wait_until() {
  local secs=$1 name=$2 deadline
  shift 2
  deadline=$((SECONDS + secs))
  while ((SECONDS < deadline)); do
    "$@" >/dev/null 2>&1 && return 0
    if [ -s "$RUN/$name.pid" ] && ! alive "$name"; then
      echo "prod: $name exited before it was ready; see $RUN/$name.log" >&2
      tail -n 30 "$RUN/$name.log" >&2 || true
      return 1
    fi
    sleep 0.2
  done
  echo "prod: $name not ready after ${secs}s; see $RUN/$name.log" >&2
  tail -n 30 "$RUN/$name.log" >&2 || true
  return 1
}

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---------- certificates: a local CA and what it signs, made once with openssl
leaf_cert() { # name CN extensions: a P-256 key and a certificate signed by the CA
  local name=$1 cn=$2 ext=$3
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$cn" \
    -keyout "$TLS_DIR/$name-key.pem" -out "$TLS_DIR/$name.csr" 2>/dev/null
  openssl x509 -req -in "$TLS_DIR/$name.csr" -CA "$CA_FILE" -CAkey "$TLS_DIR/ca-key.pem" \
    -set_serial "0x$(openssl rand -hex 16)" -days 825 -out "$TLS_DIR/$name.pem" \
    -extfile <(printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n%b' "$ext") 2>/dev/null
  rm -f "$TLS_DIR/$name.csr"
}

# Servers also connect to each other (Temporal's services, Redis replicas and
# cluster bus) with the server certificate: clientAuth too.
server_cert() { leaf_cert server localhost "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:$PUBLIC_HOST\nextendedKeyUsage=serverAuth,clientAuth"; }

# server_names_public_host: the server certificate names $PUBLIC_HOST (one
# made before the profile had a public name, or for another PUBLIC_HOST, does not).
server_names_public_host() {
  openssl x509 -in "$TLS_DIR/server.pem" -noout -ext subjectAltName 2>/dev/null | tr ',' '\n' | sed 's/^ *//' | grep -qxF "DNS:$PUBLIC_HOST"
}

ensure_certs() {
  if [ -s "$TLS_DIR/client.pem" ]; then
    server_names_public_host && return 0
    # The CA and the client certificate stay: what trusts them keeps working.
    echo "prod: the server certificate does not name $PUBLIC_HOST: making a new one (components started before keep the old one until they are started again)"
    (umask 077 && server_cert)
  else
    echo "prod: making the profile's certificates (a local CA) in $TLS_DIR"
    mkdir -p "$TLS_DIR"
    (
      umask 077
      openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
        -subj "/CN=oncegate prod-local CA" -keyout "$TLS_DIR/ca-key.pem" -out "$CA_FILE" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
      server_cert
      leaf_cert client oncegate-client 'extendedKeyUsage=clientAuth'
    )
  fi
  chmod 644 "$TLS_DIR"/*.pem
  chmod 600 "$TLS_DIR"/*-key.pem
}

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
  go build -o "$BIN/" ./cmd/gateway ./cmd/worker ./cmd/downstream ./cmd/oncegate-ops ./cmd/oncegate-rebuild
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

# PostgreSQL speaks TLS only: pg_hba.conf accepts hostssl and rejects
# hostnossl. Its key and certificate are copied where the postgres user owns
# them (PostgreSQL refuses a key others can read).
start_postgres() {
  local dir
  dir=$(cd "$(pg_data_dir)" && pwd -P)
  mkdir -p "$dir/tls"
  cp "$TLS_DIR/server.pem" "$TLS_DIR/server-key.pem" "$dir/tls/"
  cat >"$dir/tls/pg_hba.conf" <<'HBA'
# The production-like profile (scripts/prod.sh): TLS or nothing.
local     all all                trust
hostssl   all all 127.0.0.1/32   trust
hostnossl all all 127.0.0.1/32   reject
hostnossl all all ::1/128        reject
HBA
  [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$dir/tls"
  chmod 600 "$dir/tls/server-key.pem"
  start_postmaster -c max_connections=300 -c ssl=on -c ssl_cert_file="$dir/tls/server.pem" \
    -c ssl_key_file="$dir/tls/server-key.pem" -c hba_file="$dir/tls/pg_hba.conf"
  # Temporal's two databases, the gateway's truth and the simulator's data.
  ensure_databases temporal temporal_visibility oncegate oncegate_sim
}

# ---------- Redis Cluster
redis_port() { echo $((REDIS_BASE_PORT + $1 - 1)); } # node number (1..N) -> port

# override NAME: the component's overrides, sourced in a subshell by its caller.
override() { [ -f "$RUN/override/$1.env" ] && . "$RUN/override/$1.env"; return 0; }

start_redis_node() { # n
  local n=$1 port dir announced announce=()
  port=$(redis_port "$n")
  dir=$RUN/redis-$n
  mkdir -p "$dir"
  # The port the node announces to clients and replicas, when overridden
  # (else its own); the cluster bus stays on its own port.
  announced=$( (override "redis-$n"; echo "${REDIS_ANNOUNCE_PORT:-}") )
  [ -n "$announced" ] && announce=(--cluster-announce-port "$announced" --cluster-announce-bus-port $((REDIS_BUS_BASE_PORT + n - 1)))
  # TLS only (port 0): clients, replication and the cluster bus. Clients
  # present no certificate (tls-auth-clients no); the nodes present theirs
  # to each other.
  spawn "redis-$n" redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 --protected-mode no --daemonize no \
    --tls-cert-file "$TLS_DIR/server.pem" --tls-key-file "$TLS_DIR/server-key.pem" --tls-ca-cert-file "$CA_FILE" \
    --tls-auth-clients no --tls-replication yes --tls-cluster yes \
    --dir "$dir" --appendonly yes --save "" \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-port $((REDIS_BUS_BASE_PORT + n - 1)) \
    --cluster-node-timeout "$REDIS_NODE_TIMEOUT_MS" "${announce[@]}"
  wait_until 30 "redis-$n" rcli -p "$port" ping
}

rcli() { redis-cli --tls --cacert "$CA_FILE" "$@"; }

cluster_ok() { rcli -p "$REDIS_BASE_PORT" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; }

# Creates the cluster once (every node still knows only itself); after that
# the nodes keep the layout in their nodes.conf and a restarted node rejoins.
ensure_redis_cluster() {
  local known
  known=$(rcli -p "$REDIS_BASE_PORT" cluster info | sed -n 's/^cluster_known_nodes:\([0-9]*\).*/\1/p')
  if [ "$known" = 1 ]; then
    echo "prod: creating the Redis Cluster ($REDIS_NODES nodes, $REDIS_REPLICAS replica(s) per master)"
    # shellcheck disable=SC2046
    rcli --cluster create $(echo "$REDIS_ADDRS" | tr , ' ') --cluster-replicas "$REDIS_REPLICAS" --cluster-yes \
      >>"$RUN/redis-1.log" 2>&1
  fi
  wait_until 60 redis-1 cluster_ok
}

# ---------- Temporal
temporal_cli() {
  "$BIN/temporal" --address "$TEMPORAL_ADDRESS" --tls-ca-path "$CA_FILE" \
    --tls-cert-path "$TLS_DIR/client.pem" --tls-key-path "$TLS_DIR/client-key.pem" "$@"
}

setup_temporal_schema() {
  local schema db sub
  schema=$(temporal_schema_dir)
  for db in temporal temporal_visibility; do
    sub=temporal
    [ "$db" = temporal_visibility ] && sub=visibility
    local tool=("$BIN/temporal-sql-tool" --plugin postgres12 --ep 127.0.0.1 -p "$PGPORT" -u postgres --db "$db"
      --tls --tls-ca-file "$CA_FILE")
    if [ "$(psql_q "SELECT to_regclass('public.schema_version') IS NOT NULL" "$db")" != t ]; then
      "${tool[@]}" setup-schema -v 0.0 >>"$RUN/temporal.log" 2>&1
    fi
    "${tool[@]}" update-schema -d "$schema/$sub/versioned" >>"$RUN/temporal.log" 2>&1
  done
}

start_temporal() {
  setup_temporal_schema
  # The server reaches its persistence at PGPORT, which its override may
  # move (the soak's temporal->postgres hop); the schema tool above does not.
  (
    override temporal
    spawn temporal "$BIN/temporal-server" --root "$ROOT" --config deployments/prod-local/temporal \
      --env prod-local --allow-no-auth start
  )
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
  # The server caches search attributes (deployments/prod-local/temporal/
  # dynamicconfig.yaml): wait until a query by all three is accepted.
  wait_until 90 temporal temporal_cli workflow list --namespace "$TEMPORAL_NAMESPACE" --limit 1 \
    --query "IdemState = 'DONE' AND IdemScope = 'x' AND IdemSubject = 'x'"
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
    override "$name"
    spawn "$name" "$BIN/$binary"
  )
}

healthy() { curl -fsS --cacert "$CA_FILE" -o /dev/null "$1/healthz"; }

# The simulator (plain HTTP: it stands for a third party) posts its payout
# webhooks to gateway-1 over HTTPS, trusting the profile's CA.
start_downstream() {
  local hook
  start_binary downstream downstream "SSL_CERT_FILE=$CA_FILE"
  wait_until 30 downstream healthy "$DOWNSTREAM_URL"
  hook=$( (override downstream; echo "${PAYOUT_WEBHOOK_GATEWAY_URL:-$GATEWAY_1_URL}") )
  curl -fsS -X PUT "$DOWNSTREAM_URL/_sim/webhook" -H 'Content-Type: application/json' \
    -d "{\"url\":\"$hook/v1/webhooks/payments.payout\",\"secret\":\"$(cat "$RUN/payout-webhook.secret")\"}" >/dev/null
}
start_worker() { # n
  start_binary "worker-$1" worker "WORKER_METRICS_URL=http://127.0.0.1:$((WORKER_METRICS_BASE_PORT + $1 - 1))/metrics"
  sleep 1
  alive "worker-$1" || { echo "prod: worker-$1 exited; see $RUN/worker-$1.log" >&2; tail -n 20 "$RUN/worker-$1.log" >&2; return 1; }
}
start_gateway() { # n url
  start_binary "gateway-$1" gateway "GATEWAY_URL=$2" "ONCEGATE_TLS_CERT_FILE=$TLS_DIR/server.pem" \
    "ONCEGATE_TLS_KEY_FILE=$TLS_DIR/server-key.pem"
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
  ensure_certs
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

# ---------- backup and restore of the truth
pg_tool() { as_pg "$(pg_bin)/$1" -h 127.0.0.1 -p "$PGPORT" -U postgres "${@:2}"; }

backup() { # [file]
  local file=${1:-$RUN/backups/truth-$(date -u +%Y%m%dT%H%M%SZ).dump} at
  mkdir -p "$(dirname "$file")"
  # Taken before the dump's snapshot: whatever the dump lacks ended after it.
  at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  pg_tool pg_dump --format=custom --dbname=oncegate >"$file.tmp"
  mv "$file.tmp" "$file"
  echo "$at" >"$file.since"
  echo "prod: backed up the truth (database oncegate, taken at $at) into $file"
}

# Writes back into the truth what Temporal knows of the operations that ran
# or ended since the backup; exit 1 of oncegate-rebuild means a person must
# look at the operations it lists (it wrote the rest).
rebuild() { # since
  local report=$RUN/rebuild-$(date -u +%Y%m%dT%H%M%SZ).json rc=0
  (
    # shellcheck disable=SC1091
    . "$RUN/stack.env"
    "$BIN/oncegate-rebuild" -since "$1"
  ) >"$report" 2>>"$RUN/rebuild.log" || rc=$?
  cat "$report"
  case $rc in
    0) echo "prod: the truth holds what Temporal knows since $1 (report $report)" ;;
    1) echo "prod: WARNING: operations need a person (listed under attention in $report); the rest was written back" >&2 ;;
    *) echo "prod: oncegate-rebuild failed (see $RUN/rebuild.log); fix it, run 'scripts/prod.sh rebuild $1', then start the workers and gateways" >&2
       return 1 ;;
  esac
}

restore() { # file
  local file=$1 since port
  [ -s "$file" ] && [ -s "$file.since" ] || { echo "prod: restore needs a backup FILE and FILE.since (scripts/prod.sh backup)" >&2; return 1; }
  since=$(cat "$file.since")
  echo "prod: restoring the truth from $file (taken at $since)"
  for c in gateway-1 gateway-2 worker-1 worker-2; do stop_one "$c"; done
  psql_q "DROP DATABASE IF EXISTS oncegate WITH (FORCE)" >/dev/null
  ensure_databases oncegate
  pg_tool pg_restore --single-transaction --exit-on-error --no-owner --dbname=oncegate <"$file"
  # Redis only caches the truth: after a restore it may hold claims and
  # outcomes the truth no longer has. Every master is emptied (replicas follow).
  for ((i = 1; i <= REDIS_NODES; i++)); do
    port=$(redis_port "$i")
    [ "$(rcli -p "$port" role 2>/dev/null | head -n 1)" = master ] && rcli -p "$port" flushall >/dev/null
  done
  rebuild "$since"
  start worker-1 worker-2 gateway-1 gateway-2
  echo "prod: restored; the workers and the gateways run again"
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
  backup) shift; backup "$@" ;;
  restore) [ $# -eq 2 ] || { echo "usage: $0 restore FILE" >&2; exit 2; }; restore "$2" ;;
  rebuild) [ $# -eq 2 ] || { echo "usage: $0 rebuild SINCE" >&2; exit 2; }; rebuild "$2" ;;
  clean) down; forget_state ;;
  *) echo "usage: $0 up|down|status|build|start NAME...|backup [FILE]|restore FILE|rebuild SINCE|clean" >&2; exit 2 ;;
esac
