package httpapi

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/sealtrail/sealtrail/tlog"
)

// writeInclusion writes the 200 response of GET /proof/inclusion. It is the hot read
// of the API (issue 21: ≥ 20,000 proofs/s), so the body is appended into one buffer
// rather than encoded through reflection and a map; the bytes are what writeJSON
// wrote for the same members (keys in order, a final newline), which a test checks.
func writeInclusion(w http.ResponseWriter, stream string, leafIndex, treeSize uint64, leaf tlog.Hash, proof []tlog.Hash) {
	b := make([]byte, 0, 128+len(stream)+(len(proof)+1)*(2*tlog.HashSize+3))
	b = append(b, `{"leafHash":"`...)
	b = hex.AppendEncode(b, leaf[:])
	b = append(b, `","leafIndex":`...)
	b = strconv.AppendUint(b, leafIndex, 10)
	b = append(b, `,"proof":[`...)
	for i, h := range proof {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = hex.AppendEncode(b, h[:])
		b = append(b, '"')
	}
	b = append(b, `],"stream":`...)
	b = appendJSONString(b, stream)
	b = append(b, `,"treeSize":`...)
	b = strconv.AppendUint(b, treeSize, 10)
	b = append(b, "}\n"...)
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Cache-Control"] = []string{"no-store"}
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// appendJSONString appends s as a JSON string, as writeJSON's encoder would (HTML
// characters not escaped).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
