#!/usr/bin/env bash
# Chromium, the headless browser the dashboard's browser tests drive with chromedp
# (ExecPath /usr/bin/chromium). From Debian, without recommends. Idempotent: does
# nothing when /usr/bin/chromium is already installed.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "chromium $(dpkg-query -W -f='${Version}' chromium 2>/dev/null) already installed"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get update
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
echo "chromium $(dpkg-query -W -f='${Version}' chromium) installed"
