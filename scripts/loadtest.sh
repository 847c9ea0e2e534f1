#!/usr/bin/env bash
# make loadtest: a bounded, loopback-only load test of the built binaries (see
# cmd/sealtrail-load and docs/performance.md). It builds bin/sealtraild and
# bin/sealtrail-load, uses the PostgreSQL server named by SEALTRAIL_TEST_POSTGRES or
# starts a throwaway one (scripts/testenv/postgres.sh), and prints one table row per
# case. Each case runs LOADTEST_DURATION (default 8s) after a 1 s warm-up, in
# LOADTEST_ROUNDS (default 3) interleaved rounds; the whole run takes 13-18 minutes.
# Extra arguments go to `sealtrail-load run` (see -h).
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/ ./cmd/sealtraild ./cmd/sealtrail-load
TESTENV_DIR=$(mktemp -d /tmp/sealtrail-loadenv.XXXXXX)
export TESTENV_DIR
TESTENV_PIDS=()
cleanup() {
  for f in "$TESTENV_DIR"/*.cleanup; do [ -e "$f" ] && bash "$f" || true; done
  rm -rf "$TESTENV_DIR"
}
trap cleanup EXIT
if [ -z "${SEALTRAIL_TEST_POSTGRES:-}" ]; then
  # shellcheck source=/dev/null
  source scripts/testenv/postgres.sh
fi
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)'), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
bin/sealtrail-load run -duration "${LOADTEST_DURATION:-8s}" -rounds "${LOADTEST_ROUNDS:-3}" -pg "${SEALTRAIL_TEST_POSTGRES:-}" "$@"
