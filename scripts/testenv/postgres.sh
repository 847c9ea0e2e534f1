# Sourced by scripts/test.sh (set -euo pipefail active; TESTENV_DIR and TESTENV_PIDS set).
# Starts a throwaway PostgreSQL 15 cluster on 127.0.0.1 and exports SEALTRAIL_TEST_POSTGRES.
# initdb refuses root, so when run as root the cluster runs as the postgres user. fsync
# stays on: the catalog tests exercise crash safety. Missing binaries print one line and
# the script carries on (the tests then skip locally and fail under CI=true).

sealtrail_pg_start() {
  local bin="${SEALTRAIL_PG_BIN:-/usr/lib/postgresql/15/bin}"
  if [ ! -x "$bin/initdb" ] || [ ! -x "$bin/pg_ctl" ]; then
    echo "testenv/postgres: PostgreSQL 15 binaries not found in $bin; PostgreSQL tests will skip"
    return 0
  fi
  local as=()
  if [ "$(id -u)" = 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      echo "testenv/postgres: running as root but no postgres user exists; PostgreSQL tests will skip"
      return 0
    fi
    as=(runuser -u postgres --)
  fi
  local dir
  dir=$(mktemp -d /tmp/sealtrail-pg.XXXXXX)
  chmod 700 "$dir"
  if [ "${#as[@]}" -gt 0 ]; then chown postgres: "$dir"; fi
  # The data dir lives outside TESTENV_DIR (which root owns); the cleanup hook stops the
  # server and removes it.
  cat >"$TESTENV_DIR/postgres.cleanup" <<CLEANUP
${as[*]} "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
rm -rf "$dir"
CLEANUP

  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000)))

  if ! "${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1; then
    echo "testenv/postgres: initdb failed (see below); PostgreSQL tests will skip"
    tail -n 5 "$dir/initdb.log" || true
    return 0
  fi
  cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 200
shared_buffers = 128MB
logging_collector = off
CONF
  if ! "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null 2>&1; then
    echo "testenv/postgres: server failed to start (see below); PostgreSQL tests will skip"
    tail -n 5 "$dir/server.log" || true
    return 0
  fi
  local pid
  pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
  if [ -n "$pid" ]; then TESTENV_PIDS+=("$pid"); fi
  export SEALTRAIL_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  echo "testenv/postgres: PostgreSQL on 127.0.0.1:$port (data $dir)"
}
sealtrail_pg_start
unset -f sealtrail_pg_start
