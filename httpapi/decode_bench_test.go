package httpapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tlog"
)

// BenchmarkIngestDecode1KB is the CPU an ingest spends on a normal 1 KB body before
// sealing: canonicalization with the ingest limits, validation, the payload.
func BenchmarkIngestDecode1KB(b *testing.B) {
	body := fmt.Appendf(nil, `{"action":"document.export","actor":{"type":"user","id":"usr_8f2c41","display":"Ada Lovelace"},`+
		`"status":"success","target":{"type":"document","id":"doc_77a1","display":"Q3 board deck"},"risk":"medium",`+
		`"requestId":"req_0c9e","sessionId":"ses_4411","ipAddress":"203.0.113.7","userAgent":"Mozilla/5.0 (X11; Linux x86_64)",`+
		`"agentId":"agt_writer","model":"model-x","toolName":"export_pdf","toolCallId":"call_123",`+
		`"context":{"tenant":"acme","region":"eu-west-1","feature_flags":["a","b","c"],"path":"/v2/documents/doc_77a1/export"},`+
		`"metadata":{"pages":42,"format":"pdf","watermark":true,"note":%q}}`, strings.Repeat("x", 420))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		canon, err := tlog.CanonicalizeLimited(body, ingestLimits)
		if err != nil {
			b.Fatal(err)
		}
		in, errs := parseEvent(canon)
		if errs != nil {
			b.Fatal(errs)
		}
		_ = in.payload()
	}
}
