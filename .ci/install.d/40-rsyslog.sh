#!/usr/bin/env bash
# rsyslog with its GnuTLS driver (rsyslog-gnutls), the syslog-over-TLS receiver the SIEM
# streaming tests run (siem and integration tests start rsyslogd -n with imtcp + gtls on
# 127.0.0.1 and throwaway certificates). Idempotent: does nothing when rsyslogd and the
# gtls network stream driver are already present.
set -euo pipefail
have_gtls() {
  [ -x /usr/sbin/rsyslogd ] || return 1
  local f
  for f in /usr/lib/*/rsyslog/lmnsd_gtls.so /usr/lib/rsyslog/lmnsd_gtls.so; do
    [ -e "$f" ] && return 0
  done
  return 1
}
if have_gtls; then
  echo "rsyslog with gnutls already installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends rsyslog rsyslog-gnutls
# The package may start a system rsyslogd under systemd; the tests run their own.
have_gtls
