# Sourced by scripts/test.sh (set -euo pipefail is active): start versitygw, an
# S3-compatible server with a POSIX backend that honours If-None-Match: *, on
# loopback, and export how to reach it:
#   SEALTRAIL_TEST_S3             s3://sealtrail-test?endpoint=http://127.0.0.1:PORT&path_style=true&region=us-east-1
#   SEALTRAIL_TEST_S3_ACCESS_KEY  the root access key
#   SEALTRAIL_TEST_S3_SECRET_KEY  the root secret key
# Without the binary (installed by .ci/install.d/20-versitygw.sh) it prints one line
# and the S3 tests skip (or fail under CI=true).

testenv_s3() {
  local bin port root
  bin="$(go env GOPATH)/bin/versitygw"
  if [ ! -x "$bin" ]; then
    echo "testenv: versitygw not installed ($bin); S3 tests will skip (run .ci/install.d/20-versitygw.sh)"
    return 0
  fi
  root="$TESTENV_DIR/s3"
  mkdir -p "$root/sealtrail-test"
  # shellcheck source=/dev/null
  source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
  testenv_s3_start() {
    ROOT_ACCESS_KEY_ID=sealtrail-test ROOT_SECRET_ACCESS_KEY=sealtrail-test-secret \
      "$bin" --port "127.0.0.1:$1" --quiet posix "$root" >>"$TESTENV_DIR/versitygw.log" 2>&1 &
  }
  if testenv_listen testenv_s3_start; then
    port=$TESTENV_PORT
    export SEALTRAIL_TEST_S3="s3://sealtrail-test?endpoint=http://127.0.0.1:$port&path_style=true&region=us-east-1"
    export SEALTRAIL_TEST_S3_ACCESS_KEY=sealtrail-test
    export SEALTRAIL_TEST_S3_SECRET_KEY=sealtrail-test-secret
    echo "testenv: versitygw on 127.0.0.1:$port"
    return 0
  fi
  echo "testenv: versitygw did not start (see $TESTENV_DIR/versitygw.log); S3 tests will skip"
  return 0
}
testenv_s3
unset -f testenv_s3 testenv_s3_start testenv_listen
