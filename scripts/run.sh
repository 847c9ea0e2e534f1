#!/usr/bin/env bash
# make run: start the service on the embedded default (SQLite catalog and filesystem
# store under ./data), creating a demo project on first start and printing how to use it.
set -euo pipefail
cd "$(dirname "$0")/.."
exec ./bin/sealtraild serve --dev "$@"
