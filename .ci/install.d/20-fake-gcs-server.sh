#!/usr/bin/env bash
# fake-gcs-server, the GCS emulator the GCS driver's tests run against
# (scripts/testenv/gcs.sh starts it). Pinned; idempotent: does nothing when the
# installed binary is already this version.
set -euo pipefail
mod=github.com/fsouza/fake-gcs-server
version=v1.56.1
bin="$(go env GOPATH)/bin/fake-gcs-server"
if [ -x "$bin" ] && go version -m "$bin" | grep -qE "^[[:space:]]+mod[[:space:]]+$mod[[:space:]]+$version[[:space:]]"; then
  echo "fake-gcs-server $version already installed"
  exit 0
fi
go install "$mod@$version"
