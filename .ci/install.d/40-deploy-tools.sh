#!/usr/bin/env bash
# The tools deploy/'s tests lint and build the deployment files with: buildah (builds
# the Dockerfile and runs the image, chroot isolation), systemd-analyze (the unit),
# helm (the chart) and promtool (the alert rules). Pinned; idempotent: skips what is
# installed at the pinned version. helm and promtool build from the Go module proxy
# (a few minutes each, once).
set -euo pipefail
if ! command -v buildah >/dev/null 2>&1 || ! command -v systemd-analyze >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends buildah systemd >/dev/null
fi
install_go() { # install_go NAME MODULE PACKAGE VERSION
  local bin
  bin="$(go env GOPATH)/bin/$1"
  if [ -x "$bin" ] && go version -m "$bin" | grep -qE "^[[:space:]]+mod[[:space:]]+$2[[:space:]]+$4[[:space:]]"; then
    echo "$1 $4 already installed"
    return
  fi
  go install "$3@$4"
}
install_go helm helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm v3.22.0
install_go promtool github.com/prometheus/prometheus github.com/prometheus/prometheus/cmd/promtool v0.316.0
