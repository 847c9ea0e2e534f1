#!/usr/bin/env bash
# make test: lint, then every test with -race. Servers the tests need (PostgreSQL, an
# S3-compatible server, the GCS emulator) are started on loopback by scripts/testenv/*.sh
# when their binaries are installed (.ci/run installs them); each exports the variable
# its tests read. Without a server those tests skip locally and fail under CI=true.
# Then the TypeScript client (scripts/test-typescript.sh; needs node >= 20 and npm).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(go env GOPATH)/bin:$PATH"
TESTENV_DIR=$(mktemp -d /tmp/sealtrail-testenv.XXXXXX)
export TESTENV_DIR
TESTENV_PIDS=()
cleanup() {
  for pid in "${TESTENV_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for f in "$TESTENV_DIR"/*.cleanup; do [ -e "$f" ] && bash "$f" || true; done
  rm -rf "$TESTENV_DIR"
}
trap cleanup EXIT
for env in scripts/testenv/*.sh; do
  [ -e "$env" ] || continue
  # shellcheck source=/dev/null
  source "$env"
done
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" $unformatted >&2
  exit 1
fi
go vet ./...
./scripts/staticcheck.sh
go test -race -count=1 -timeout 30m ${GOTESTFLAGS:-} ./...
./scripts/test-typescript.sh
