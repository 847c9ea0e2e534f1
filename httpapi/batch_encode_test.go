package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestWriteBatchResult: the hand-appended batch answer is byte for byte, headers
// included, what writeJSON writes, for every kind of item.
func TestWriteBatchResult(t *testing.T) {
	for _, res := range []batchResult{
		{Results: []batchItem{}},
		{Sealed: 2, Results: []batchItem{{Index: 0, Status: itemSealed, ID: "evt_01ABC"}, {Index: 1, Status: itemSealed, ID: "evt_x-y_z"}}},
		{Sealed: 2, Results: []batchItem{
			{Index: 0, Status: itemSealed, ID: "evt_01ABC"},
			{Index: 1, Status: itemRejected, Code: 400, Error: "Invalid event",
				Details: []FieldError{{Field: "actor.id", Message: "must be 1 to 512 characters <&> \u2028 \"q\""}}},
			{Index: 2, Status: itemUnavailable, Code: 503, Error: "busy", RetryAfter: 2},
			{Index: 3, Status: itemFailed, Code: 500, Error: "Internal error"},
			{Index: 4, Status: itemSealed, ID: "evt_\u00e9\"\\"},
			{Index: 5, Status: itemSealed},
			{Index: 6, Status: itemRejected, Code: 413, Error: "Event exceeds the limit"},
		}},
	} {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		writeJSON(want, http.StatusOK, res)
		writeBatchResult(got, res)
		if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Errorf("wrote %d %s\nwriteJSON: %d %s", got.Code, got.Body, want.Code, want.Body)
		}
		for _, h := range []string{"Content-Type", "Cache-Control"} {
			if got.Header().Get(h) != want.Header().Get(h) {
				t.Errorf("%s: %q, writeJSON %q", h, got.Header().Get(h), want.Header().Get(h))
			}
		}
	}
}
