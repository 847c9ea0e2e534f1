#!/usr/bin/env bash
# make soak: bounded native fuzzing of the HTTP ingest decoder and of JCS, FUZZTIME per
# target (default 60s, about three minutes in all), then the probe of a running service
# (slowloris, oversize and deep-nesting requests: TestSoakProbe in integration/).
# make test runs only the fuzz seed corpora; none of this is in the default CI path.
set -euo pipefail
cd "$(dirname "$0")/.."
export FUZZTIME="${FUZZTIME:-60s}"
FUZZ_MATCH='^FuzzIngestDecoder$' ./scripts/fuzz.sh ./httpapi
FUZZ_MATCH='^(FuzzCanonicalize|FuzzDecodeExportLine)$' ./scripts/fuzz.sh ./tlog
if ! grep -qs '^func TestSoakProbe(' integration/*_test.go; then
  echo "soak: integration has no TestSoakProbe (integration/soak_probe_test.go)" >&2
  exit 1
fi
echo "== integration TestSoakProbe"
SEALTRAIL_SOAK=1 go test ./integration -run '^TestSoakProbe$' -count=1
