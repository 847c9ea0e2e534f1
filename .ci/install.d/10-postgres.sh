#!/usr/bin/env bash
# PostgreSQL 15 server binaries for the catalog tests (scripts/testenv/postgres.sh starts
# a throwaway cluster from them). Idempotent: does nothing when they are already present.
set -euo pipefail
if [ -x /usr/lib/postgresql/15/bin/initdb ] && [ -x /usr/lib/postgresql/15/bin/pg_ctl ]; then
  echo "postgresql-15 already installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends postgresql-15
