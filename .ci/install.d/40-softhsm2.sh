#!/usr/bin/env bash
# SoftHSM2, the PKCS#11 token the keyring/pkcs11 tests run against (each test makes a
# throwaway token directory through SOFTHSM2_CONF). Debian package; idempotent.
set -euo pipefail
if command -v softhsm2-util >/dev/null 2>&1 && [ -e /usr/lib/softhsm/libsofthsm2.so ]; then
  echo "softhsm2 already installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=900 update -qq
apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends softhsm2
