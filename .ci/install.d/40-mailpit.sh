#!/usr/bin/env bash
set -euo pipefail
go install github.com/axllent/mailpit@v1.27.11
