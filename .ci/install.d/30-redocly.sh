#!/usr/bin/env bash
# redocly, the OpenAPI linter httpapi's TestOpenAPILint runs on httpapi/openapi.json.
# Pinned: the exact @redocly/cli version and its whole dependency tree are fixed by
# .ci/redocly/package.json and package-lock.json, installed with `npm ci` into a fixed
# prefix (/opt/sealtrail/redocly, or $SEALTRAIL_REDOCLY_PREFIX). Node and npm come
# from Debian when node is missing. Idempotent: does nothing when the prefix already
# holds this lock file's install.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)/redocly"
prefix="${SEALTRAIL_REDOCLY_PREFIX:-/opt/sealtrail/redocly}"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm
fi
if [ -x "$prefix/node_modules/.bin/redocly" ] && cmp -s "$here/package-lock.json" "$prefix/package-lock.json"; then
  echo "redocly $("$prefix/node_modules/.bin/redocly" --version) already installed in $prefix"
  exit 0
fi
mkdir -p "$prefix"
cp "$here/package.json" "$here/package-lock.json" "$prefix/"
npm ci --prefix "$prefix" --no-audit --no-fund --ignore-scripts
echo "redocly $("$prefix/node_modules/.bin/redocly" --version) installed in $prefix"
