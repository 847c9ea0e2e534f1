#!/usr/bin/env bash
# The TypeScript client's suite (clients/typescript): npm ci from the lockfile, tsc, then
# node --test against a real sealtraild the suite starts from bin/. scripts/test.sh runs
# it after the Go tests. Without node >= 20 and npm it skips locally and fails under
# CI=true (.ci/install.d/30-node.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=""
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing="node or npm is not installed"
elif [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  missing="node $(node --version) is older than 20"
fi
if [ -n "$missing" ]; then
  if [ "${CI:-}" = true ]; then
    echo "FAIL clients/typescript: $missing (.ci/install.d/30-node.sh installs it)" >&2
    exit 1
  fi
  echo "SKIP clients/typescript: $missing"
  exit 0
fi
go build -o bin/ ./cmd/sealtraild ./cmd/sealtrail
export SEALTRAIL_BIN_DIR="$PWD/bin"
cd clients/typescript
npm ci --no-audit --no-fund --loglevel=error
npm test
