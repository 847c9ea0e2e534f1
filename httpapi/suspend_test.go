package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSuspension: a suspended project's ingest, single and batch, gets 429 with the
// reason and Retry-After; reads keep working; unsuspending restores ingest.
func TestSuspension(t *testing.T) {
	for _, kind := range catalogKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, kind, 0, 0)
			admin := "/admin/v1/projects/" + s.project + "/suspension"
			event := `{"action":"a","actor":{"type":"u","id":"1"}}`
			if code, body := s.do(http.MethodPost, "/api/v1/log", event); code != http.StatusAccepted {
				t.Fatalf("ingest before suspension: %d %s", code, body)
			}
			for _, bad := range []string{`{}`, `{"reason":""}`, `{"reason":"` + strings.Repeat("x", 300) + `"}`, `{"reason":1}`} {
				if code, body := s.doAs(stackOperatorToken, http.MethodPut, admin, bad); code != http.StatusBadRequest || !strings.Contains(body, `"error"`) {
					t.Fatalf("suspend with %s: %d %s", bad, code, body)
				}
			}
			if code, body := s.doAs(stackOperatorToken, http.MethodDelete, admin, ""); code != http.StatusConflict {
				t.Fatalf("unsuspend an active project: %d %s", code, body)
			}
			if code, body := s.doAs(stackOperatorToken, http.MethodPut, admin, `{"reason":"payment_overdue"}`); code != http.StatusOK {
				t.Fatalf("suspend: %d %s", code, body)
			}
			for _, req := range []struct{ path, body string }{
				{"/api/v1/log", event}, {"/api/v1/log/batch", `{"events":[` + event + `]}`},
			} {
				r := httptest.NewRequest(http.MethodPost, req.path, strings.NewReader(req.body))
				r.Header.Set("Authorization", "Bearer "+s.token)
				rec := httptest.NewRecorder()
				s.h.ServeHTTP(rec, r)
				var got errorBody
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusTooManyRequests ||
					got.Reason != "payment_overdue" || rec.Header().Get("Retry-After") != "3600" {
					t.Fatalf("%s while suspended: %d %q %s", req.path, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
				}
			}
			if code, body := s.do(http.MethodGet, "/api/v1/events", ""); code != http.StatusOK || !strings.Contains(body, `"action":"a"`) {
				t.Fatalf("read while suspended: %d %s", code, body)
			}
			if code, body := s.doAs(stackOperatorToken, http.MethodDelete, admin, ""); code != http.StatusOK {
				t.Fatalf("unsuspend: %d %s", code, body)
			}
			if code, body := s.do(http.MethodPost, "/api/v1/log", event); code != http.StatusAccepted {
				t.Fatalf("ingest after unsuspension: %d %s", code, body)
			}
		})
	}
}

// TestRetentionAdmin: back to "keep forever" and the per-project minimum.
func TestRetentionAdmin(t *testing.T) {
	s := newStack(t, "sqlite", 0, 0)
	base := "/admin/v1/projects/" + s.project
	op := func(method, path, body string, want int) string {
		t.Helper()
		code, got := s.doAs(stackOperatorToken, method, base+path, body)
		if code != want {
			t.Fatalf("%s %s %s: %d %s, want %d", method, path, body, code, got, want)
		}
		return got
	}
	op(http.MethodDelete, "/retention/events", "", http.StatusNotFound)
	op(http.MethodDelete, "/retention/nope", "", http.StatusBadRequest)
	op(http.MethodPut, "/retention", `{"stream":"events","days":30}`, http.StatusOK)
	op(http.MethodDelete, "/retention/events", "", http.StatusOK)
	if got := op(http.MethodGet, "/retention", "", http.StatusOK); got != "{\"retention\":[]}\n" {
		t.Fatalf("retention after clear: %s", got)
	}
	op(http.MethodPut, "/retention-minimum", `{"days":-1}`, http.StatusBadRequest)
	op(http.MethodPut, "/retention-minimum", `{}`, http.StatusBadRequest)
	op(http.MethodPut, "/retention-minimum", `{"days":90}`, http.StatusOK)
	if got := op(http.MethodGet, "/retention-minimum", "", http.StatusOK); !strings.Contains(got, `"minimumDays":90`) {
		t.Fatalf("minimum: %s", got)
	}
}
