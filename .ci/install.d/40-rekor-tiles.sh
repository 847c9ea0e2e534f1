#!/usr/bin/env bash
# rekor-tiles, Sigstore's Rekor v2 log with the POSIX (local directory) backend, the
# public log anchor/rekor's tests submit checkpoints to (internal/testenv.Rekor starts
# it). Pinned to v2.3.0 (v2.4.1 needs a newer Go than the project's). The binary is
# named "posix" by its package path; it is installed as rekor-posix so that the name
# says what it is. Idempotent: does nothing when the installed binary is this version.
set -euo pipefail
mod=github.com/sigstore/rekor-tiles/v2
version=v2.3.0
gobin="$(go env GOPATH)/bin"
bin="$gobin/rekor-posix"
if [ -x "$bin" ] && go version -m "$bin" | grep -qE "^[[:space:]]+mod[[:space:]]+$mod[[:space:]]+$version[[:space:]]"; then
  echo "rekor-tiles $version already installed ($bin)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" go install "$mod/cmd/rekor-server/posix@$version"
mkdir -p "$gobin"
install -m 0755 "$tmp/posix" "$bin"
echo "rekor-tiles $version installed ($bin)"
