# Sourced by scripts/test.sh (set -euo pipefail is active): start fake-gcs-server, the
# GCS emulator, on loopback with a bucket "sealtrail-test", and export
#   SEALTRAIL_TEST_GCS  127.0.0.1:PORT, the value tests give STORAGE_EMULATOR_HOST
# Without the binary (installed by .ci/install.d/20-fake-gcs-server.sh) it prints one
# line and the GCS tests skip (or fail under CI=true).

testenv_gcs() {
  local bin port root
  bin="$(go env GOPATH)/bin/fake-gcs-server"
  if [ ! -x "$bin" ]; then
    echo "testenv: fake-gcs-server not installed ($bin); GCS tests will skip (run .ci/install.d/20-fake-gcs-server.sh)"
    return 0
  fi
  root="$TESTENV_DIR/gcs"
  mkdir -p "$root/data/sealtrail-test" "$root/storage"
  # shellcheck source=/dev/null
  source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
  # -public-host must name the listening address, or reads of objects 404.
  testenv_gcs_start() {
    "$bin" -scheme http -host 127.0.0.1 -port "$1" -public-host "127.0.0.1:$1" \
      -backend filesystem -filesystem-root "$root/storage" -data "$root/data" -log-level error \
      >>"$TESTENV_DIR/fake-gcs-server.log" 2>&1 &
  }
  if testenv_listen testenv_gcs_start; then
    port=$TESTENV_PORT
    export SEALTRAIL_TEST_GCS="127.0.0.1:$port"
    echo "testenv: fake-gcs-server on 127.0.0.1:$port"
    return 0
  fi
  echo "testenv: fake-gcs-server did not start (see $TESTENV_DIR/fake-gcs-server.log); GCS tests will skip"
  return 0
}
testenv_gcs
unset -f testenv_gcs testenv_gcs_start testenv_listen
