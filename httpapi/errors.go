package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// FieldError is one entry of an error's details: which input member is wrong and why.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// errorBody is every error response: {"error": "...", "details": [...]}; details only
// for schema failures, reason only for billing suspension.
type errorBody struct {
	Error   string       `json:"error"`
	Details []FieldError `json:"details,omitempty"`
	Reason  string       `json:"reason,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		slog.Debug("write response", "err", err)
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

func writeDetails(w http.ResponseWriter, status int, msg string, details []FieldError) {
	writeJSON(w, status, errorBody{Error: msg, Details: details})
}

// writeRetry writes an error that the client should retry after d; Retry-After is in
// whole seconds, at least 1.
func writeRetry(w http.ResponseWriter, status int, msg string, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(d)))
	writeError(w, status, msg)
}

// retrySeconds is d in whole seconds, rounded up, at least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}
