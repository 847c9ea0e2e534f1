#!/usr/bin/env bash
# make run: until the service (sealtraild) exists, runs the offline verifier's self-check.
set -euo pipefail
cd "$(dirname "$0")/.."
./bin/sealtrail selfcheck
