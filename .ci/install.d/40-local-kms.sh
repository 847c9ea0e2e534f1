#!/usr/bin/env bash
# local-kms, the AWS KMS emulator the keyring/awskms tests run against
# (internal/testenv.LocalKMS starts it on a free loopback port). Pinned; `go install`
# of it is refused (its go.mod has replace directives), so it is built from a
# throwaway tools module. Idempotent: does nothing when the installed binary is this
# version.
set -euo pipefail
mod=github.com/nsmithuk/local-kms
version=v0.0.0-20231025161602-e4d9425700fe
bin="$(go env GOPATH)/bin/local-kms"
if [ -x "$bin" ] && go version -m "$bin" | grep -qE "^[[:space:]]+mod[[:space:]]+$mod[[:space:]]+$version[[:space:]]"; then
  echo "local-kms $version already installed"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
go mod init sealtrail.local/tools-local-kms >/dev/null 2>&1
go get "$mod@$version"
mkdir -p "$(dirname "$bin")"
go build -o "$bin" "$mod"
echo "local-kms $version installed at $bin"
