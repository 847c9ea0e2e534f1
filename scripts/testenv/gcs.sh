# Sourced by scripts/test.sh (set -euo pipefail is active): start fake-gcs-server, the
# GCS emulator, on loopback with a bucket "sealtrail-test", and export
#   SEALTRAIL_TEST_GCS  127.0.0.1:PORT, the value tests give STORAGE_EMULATOR_HOST
# Without the binary (installed by .ci/install.d/20-fake-gcs-server.sh) it prints one
# line and the GCS tests skip (or fail under CI=true).

testenv_gcs() {
  local bin port root i
  bin="$(go env GOPATH)/bin/fake-gcs-server"
  if [ ! -x "$bin" ]; then
    echo "testenv: fake-gcs-server not installed ($bin); GCS tests will skip (run .ci/install.d/20-fake-gcs-server.sh)"
    return 0
  fi
  root="$TESTENV_DIR/gcs"
  mkdir -p "$root/data/sealtrail-test" "$root/storage"
  port=""
  for i in $(seq 1 20); do
    local p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
  done
  if [ -z "$port" ]; then
    echo "testenv: no free port for fake-gcs-server; GCS tests will skip"
    return 0
  fi
  # -public-host must name the listening address, or reads of objects 404.
  "$bin" -scheme http -host 127.0.0.1 -port "$port" -public-host "127.0.0.1:$port" \
    -backend filesystem -filesystem-root "$root/storage" -data "$root/data" -log-level error \
    >"$TESTENV_DIR/fake-gcs-server.log" 2>&1 &
  local pid=$!
  TESTENV_PIDS+=("$pid")
  for i in $(seq 1 100); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      export SEALTRAIL_TEST_GCS="127.0.0.1:$port"
      echo "testenv: fake-gcs-server on 127.0.0.1:$port"
      return 0
    fi
    sleep 0.1
  done
  echo "testenv: fake-gcs-server did not start (see $TESTENV_DIR/fake-gcs-server.log); GCS tests will skip"
  return 0
}
testenv_gcs
unset -f testenv_gcs
