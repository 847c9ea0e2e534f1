#!/usr/bin/env bash
# omniwitness, the C2SP tlog-witness the anchoring tests ask for cosignatures of the
# tree_heads checkpoint (internal/testenv/witness.go starts it). Pinned; idempotent:
# does nothing when the installed binary is already this version. Only the binary is
# installed: the witness module is never a dependency of Sealtrail (it raises
# transparency-dev/merkle to a version that breaks empty-tree consistency proofs).
set -euo pipefail
mod=github.com/transparency-dev/witness
version=v0.0.0-20260720115447-2e1c6971d19e
bin="$(go env GOPATH)/bin/omniwitness"
if [ -x "$bin" ] && go version -m "$bin" | grep -qE "^[[:space:]]+mod[[:space:]]+$mod[[:space:]]+$version[[:space:]]"; then
  echo "omniwitness $version already installed"
  exit 0
fi
go install "$mod/cmd/omniwitness@$version"
