#!/usr/bin/env bash
# Runs native fuzz targets for FUZZTIME each (default 20s): every target of every
# package, or of the packages given as arguments. FUZZ_MATCH (an extended regular
# expression) keeps only the targets whose names match.
set -euo pipefail
cd "$(dirname "$0")/.."
t="${FUZZTIME:-20s}"
match="${FUZZ_MATCH:-.}"
for pkg in $(go list "${@:-./...}"); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | grep -E "$match" || true); do
    echo "== $pkg $f ($t)"
    go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"
  done
done
