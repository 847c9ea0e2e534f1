#!/usr/bin/env bash
# sigstore timestamp-authority, the RFC 3161 time-stamping server anchor/tsa's tests ask
# for timestamps (internal/testenv.TSA starts it). Built from .ci/peers/tsa, its own
# module pinning the library (v2.1.0): upstream's timestamp-server binary also serves
# metrics on :2112 of every interface, with no flag to turn that off, and the tests'
# peers listen on loopback only. Idempotent: the Go build cache makes a rebuild of an
# unchanged tree a no-op.
set -euo pipefail
cd "$(dirname "$0")/../peers/tsa"
bin="$(go env GOPATH)/bin/sealtrail-tsa"
go build -trimpath -o "$bin" .
echo "sealtrail-tsa installed ($bin, $(go list -m -f '{{.Path}} {{.Version}}' github.com/sigstore/timestamp-authority/v2))"
