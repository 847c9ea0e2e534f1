package httpapi

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/sealtrail/sealtrail/tlog"
)

// TestWriteInclusionBytes: the hand-built inclusion response is byte for byte what
// writeJSON wrote for the same members, headers included, for any stream name and
// proof length.
func TestWriteInclusionBytes(t *testing.T) {
	var leaf tlog.Hash
	leaf[0], leaf[31] = 0xab, 0x01
	proofs := [][]tlog.Hash{nil, {}, {leaf}, {leaf, {1, 2, 3}, {}}}
	for _, stream := range []string{"events", "project_audit", "", `a"b\c`, "<&>", "é\u2028\x01"} {
		for _, proof := range proofs {
			for _, idx := range [][2]uint64{{0, 1}, {41, 1000000}, {1<<64 - 2, 1<<64 - 1}} {
				got, want := httptest.NewRecorder(), httptest.NewRecorder()
				writeInclusion(got, stream, idx[0], idx[1], leaf, proof)
				writeJSON(want, 200, map[string]any{"stream": stream, "leafIndex": idx[0],
					"treeSize": idx[1], "leafHash": tlog.Hex(leaf), "proof": hexes(proof)})
				if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
					t.Fatalf("stream %q, proof of %d: body\n%s\nwant\n%s", stream, len(proof), got.Body, want.Body)
				}
				for _, h := range []string{"Content-Type", "Cache-Control"} {
					if got.Header().Get(h) != want.Header().Get(h) {
						t.Fatalf("%s: %q, want %q", h, got.Header().Get(h), want.Header().Get(h))
					}
				}
				if got.Code != 200 {
					t.Fatalf("status %d", got.Code)
				}
			}
		}
	}
}
