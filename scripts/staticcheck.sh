#!/usr/bin/env bash
# Runs staticcheck, installing the pinned version into GOBIN when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(go env GOPATH)/bin:$PATH"
if ! command -v staticcheck >/dev/null 2>&1; then
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
staticcheck ./...
