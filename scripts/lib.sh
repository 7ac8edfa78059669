# Process helpers shared by stack.sh (the dev stack, .run/) and prod.sh (the
# production-like profile, .run-prod/). The sourcing script sets ROOT, RUN
# (the state folder), TAG (its name in messages, such as "stack") and
# COMPONENTS (start order); pid files are $RUN/<name>.pid, logs
# $RUN/<name>.log.

port_of() { # url or host:port -> port
  local s=${1#*://}; s=${s%%/*}; s=${s%%\?*}; s=${s##*@}; echo "${s##*:}"
}

alive() { # name -> 0 when its pid file names a live process (a zombie is dead)
  local f=$RUN/$1.pid pid state
  [ -s "$f" ] || return 1
  pid=$(cat "$f")
  kill -0 "$pid" 2>/dev/null || return 1
  state=$(ps -o stat= -p "$pid" 2>/dev/null || true)
  [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}

spawn() { # name cmd... : start detached, pid into $RUN/name.pid
  local name=$1; shift
  setsid "$@" >>"$RUN/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

pg_bin() { dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)"; }

# outside_dir: the one folder a stack may keep outside $RUN, named after
# $RUN itself: /var/tmp/oncegate-<TAG>-<12 hex of the SHA-256 of $RUN's
# absolute path>. PostgreSQL's data go there (and $RUN/postgres links
# there) when, as root, the postgres user cannot enter $RUN (a home folder,
# a private temporary folder). forget_state removes it with $RUN.
outside_dir() {
  echo "/var/tmp/oncegate-$TAG-$(echo -n "$RUN" | sha256sum | cut -c1-12)"
}

# pg_data_dir: $RUN/postgres, made reachable by the postgres user (see
# outside_dir).
pg_data_dir() {
  local dir=$RUN/postgres
  if [ "$(id -u)" -eq 0 ] && [ ! -e "$dir" ]; then
    if ! runuser -u postgres -- test -x "$RUN" 2>/dev/null; then
      local ext
      ext=$(outside_dir)/postgres
      mkdir -p "$ext"
      chmod 755 "$(outside_dir)"
      ln -s "$ext" "$dir"
    fi
  fi
  mkdir -p "$dir/"
  echo "$dir"
}

# as_pg cmd...: as the postgres user when root (PostgreSQL refuses root),
# run from / : PostgreSQL's programs complain ("could not change directory
# to ...: Permission denied") when started in a folder that user cannot enter.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# forget_state: after down, removes $RUN and the folder outside it, saying
# "<TAG>: forgot <folder>" for each one that existed.
forget_state() {
  local d dirs=("$(outside_dir)")
  # A link made before the folder was named after $RUN points elsewhere.
  if [ -L "$RUN/postgres" ]; then
    d=$(dirname "$(readlink "$RUN/postgres")")
    [[ $d == /var/tmp/oncegate-$TAG-* && $d != "${dirs[0]}" ]] && dirs+=("$d")
  fi
  dirs+=("$RUN")
  for d in "${dirs[@]}"; do
    if [ -e "$d" ] || [ -L "$d" ]; then
      rm -rf "$d"
      echo "$TAG: forgot $d"
    fi
  done
}

# port_taken port: 0 when something accepts connections on 127.0.0.1:port.
port_taken() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# require_free_port name port variable value: refuses (exit 2) to start
# component name on a port another process holds, naming the variable
# that moves it.
require_free_port() {
  if port_taken "$2"; then
    echo "$TAG: port $2 ($3=$4) is already in use by another process, so $1 cannot start there:" \
      "stop that process, or move this stack's port with $3 (see the README's port table)" >&2
    exit 2
  fi
}

psql_q() { # sql [database]: the answer's values, as the postgres user
  as_pg "$(pg_bin)/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -tAc "$1" "${2:-postgres}"
}

# start_postmaster [-c name=value ...]: PostgreSQL on $PGPORT over the data
# in pg_data_dir (initialised once), as the postgres user when root; returns
# once it answers a query, with the postmaster's pid in $RUN/postgres.pid.
start_postmaster() {
  local dir data bin i
  dir=$(cd "$(pg_data_dir)" && pwd -P)
  data=$dir/data
  bin=$(pg_bin)
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
  if [ ! -s "$data/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >>"$RUN/postgres.log" 2>&1
  fi
  rm -f "$data/postmaster.pid"
  local args=("$bin/postgres" -D "$data" -p "$PGPORT" -c listen_addresses=127.0.0.1 -c unix_socket_directories="$dir" "$@")
  # Started from its data folder, which the postgres user can always enter.
  if [ "$(id -u)" -eq 0 ]; then (cd "$dir" && spawn postgres runuser -u postgres -- "${args[@]}"); else spawn postgres "${args[@]}"; fi
  for ((i = 0; i < 300; i++)); do
    psql_q "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.2
  done
  if ! psql_q "SELECT 1" >/dev/null 2>&1; then
    echo "postgres did not answer on port $PGPORT in 60s; see $RUN/postgres.log" >&2
    tail -n 20 "$RUN/postgres.log" >&2 || true
    return 1
  fi
  for ((i = 0; i < 100; i++)); do
    [ -s "$data/postmaster.pid" ] && break
    sleep 0.1
  done
  # The postmaster itself, not runuser, is what the pid file names.
  head -n 1 "$data/postmaster.pid" >"$RUN/postgres.pid"
}

ensure_databases() { # name...: create each database that does not exist yet
  local db
  for db in "$@"; do
    [ "$(psql_q "SELECT 1 FROM pg_database WHERE datname='$db'")" = 1 ] ||
      as_pg "$(pg_bin)/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres "$db"
  done
}

stop_one() { # name: SIGTERM, up to STOP_WAIT tenths of a second, then SIGKILL
  local f=$RUN/$1.pid pid i
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  if alive "$1"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < ${STOP_WAIT:-100}; i++)); do
      alive "$1" || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    echo "$TAG: stopped $1"
  fi
  rm -f "$f"
}

down() { # every component, in reverse start order
  local i
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    stop_one "${COMPONENTS[$i]}"
  done
}

component_status() { # one line per component
  local c
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then echo "$c: running (pid $(cat "$RUN/$c.pid"))"; else echo "$c: stopped"; fi
  done
}
