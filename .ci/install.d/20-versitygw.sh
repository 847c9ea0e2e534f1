#!/usr/bin/env bash
# versitygw, the S3-compatible server the S3 driver's tests run against
# (scripts/testenv/s3.sh starts it). Pinned; idempotent: does nothing when the
# installed binary is already this version. Building it takes about a minute.
set -euo pipefail
mod=github.com/versity/versitygw
version=v1.8.0
bin="$(go env GOPATH)/bin/versitygw"
if [ -x "$bin" ] && go version -m "$bin" | grep -qE "^[[:space:]]+mod[[:space:]]+$mod[[:space:]]+$version[[:space:]]"; then
  echo "versitygw $version already installed"
  exit 0
fi
go install "$mod/cmd/versitygw@$version"
