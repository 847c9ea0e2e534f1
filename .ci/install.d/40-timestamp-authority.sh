#!/usr/bin/env bash
# sigstore timestamp-authority, the RFC 3161 time-stamping server anchor/tsa's tests
# ask for timestamps (internal/testenv.TSA starts it). Pinned; idempotent: does nothing
# when the installed binary is already this version.
set -euo pipefail
mod=github.com/sigstore/timestamp-authority/v2
version=v2.1.0
bin="$(go env GOPATH)/bin/timestamp-server"
if [ -x "$bin" ] && go version -m "$bin" | grep -qE "^[[:space:]]+mod[[:space:]]+$mod[[:space:]]+$version[[:space:]]"; then
  echo "timestamp-authority $version already installed ($bin)"
  exit 0
fi
go install "$mod/cmd/timestamp-server@$version"
echo "timestamp-authority $version installed ($bin)"
