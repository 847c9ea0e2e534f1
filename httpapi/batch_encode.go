package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
)

// writeBatchResult writes res exactly as writeJSON would, appending the sealed items
// (every item of a batch that went through) by hand: encoding/json's reflection over
// a thousand items was about a twentieth of the handler's CPU.
func writeBatchResult(w http.ResponseWriter, res batchResult) {
	b := make([]byte, 0, 32+len(res.Results)*64)
	b = append(b, `{"sealed":`...)
	b = strconv.AppendInt(b, int64(res.Sealed), 10)
	b = append(b, `,"results":[`...)
	var other bytes.Buffer
	enc := json.NewEncoder(&other)
	enc.SetEscapeHTML(false)
	for i := range res.Results {
		it := &res.Results[i]
		if i > 0 {
			b = append(b, ',')
		}
		if it.Status == itemSealed && plainJSONString(it.ID) && it.Code == 0 && it.Error == "" &&
			it.Details == nil && it.RetryAfter == 0 {
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(it.Index), 10)
			b = append(b, `,"status":"sealed","id":"`...)
			b = append(b, it.ID...)
			b = append(b, `"}`...)
			continue
		}
		other.Reset()
		if err := enc.Encode(it); err != nil {
			// A batchItem always encodes; should it not, answer as writeJSON does.
			slog.Debug("encode batch item", "err", err)
			writeJSON(w, http.StatusOK, res)
			return
		}
		b = append(b, bytes.TrimSuffix(other.Bytes(), []byte("\n"))...)
	}
	b = append(b, "]}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(b); err != nil {
		slog.Debug("write response", "err", err)
	}
}

// plainJSONString reports whether s is not empty and encoding/json writes it as it
// is between quotes: printable ASCII without quote or backslash.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return s != ""
}
