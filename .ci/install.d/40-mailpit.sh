#!/usr/bin/env bash
# mailpit, the SMTP server (with an HTTP API to read mail back) that the mail package's
# and the digests' tests send through (internal/testenv.Mailpit starts it). Pinned;
# idempotent: does nothing when the installed binary is already this version.
set -euo pipefail
mod=github.com/axllent/mailpit
version=v1.27.11
bin="$(go env GOPATH)/bin/mailpit"
if [ -x "$bin" ] && go version -m "$bin" | grep -qE "^[[:space:]]+mod[[:space:]]+$mod[[:space:]]+$version[[:space:]]"; then
  echo "mailpit $version already installed"
  exit 0
fi
go install "$mod@$version"
