package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// TestServeDelegated: a delegated read is served as the public API serves a key of
// the given project and scopes; writes, missing scopes and other projects are refused.
func TestServeDelegated(t *testing.T) {
	s := newStack(t, "sqlite", 1, time.Millisecond)
	if code, body := s.do(http.MethodPost, "/api/v1/log", `{"action":"doc.read","actor":{"type":"user","id":"u1"}}`); code != http.StatusAccepted {
		t.Fatalf("log: %d %s", code, body)
	}
	serve := func(key catalog.APIKey, method, path string) (int, string) {
		route, query, _ := strings.Cut(path, "?")
		r := httptest.NewRequest(method, "/dashboard/anything?"+query, nil)
		r.Header.Set("Authorization", "Bearer stk_not_a_key")
		rec := httptest.NewRecorder()
		s.srv.ServeDelegated(rec, r, key, route)
		return rec.Code, rec.Body.String()
	}
	reader := catalog.APIKey{ID: "dashboard", ProjectID: s.project, Scopes: []string{catalog.ScopeRead}}
	code, body := serve(reader, http.MethodGet, "/events?action=doc.read")
	if code != http.StatusOK || !strings.Contains(body, `"doc.read"`) {
		t.Fatalf("delegated /events: %d %s", code, body)
	}
	if code, body := serve(reader, http.MethodGet, "/events?action=other"); code != http.StatusOK || strings.Contains(body, `"doc.read"`) {
		t.Fatalf("delegated /events with a filter: %d %s", code, body)
	}
	if code, body := serve(reader, http.MethodGet, "/events?from=x"); code != http.StatusBadRequest || !strings.Contains(body, "error") {
		t.Fatalf("delegated bad filter: %d %s", code, body)
	}
	if code, body := serve(reader, http.MethodGet, "/verify"); code != http.StatusForbidden {
		t.Fatalf("delegated /verify without log:verify: %d %s", code, body)
	}
	if code, body := serve(reader, http.MethodPost, "/log"); code != http.StatusMethodNotAllowed {
		t.Fatalf("delegated POST /log: %d %s", code, body)
	}
	for _, path := range []string{"/../admin/v1/projects", "//events", "events"} {
		if code, body := serve(reader, http.MethodGet, path); code != http.StatusNotFound {
			t.Errorf("delegated %s: %d %s, want 404", path, code, body)
		}
	}
	other := catalog.APIKey{ID: "dashboard", ProjectID: "prj_other", Scopes: []string{catalog.ScopeRead}}
	if code, body := serve(other, http.MethodGet, "/events"); code != http.StatusOK || strings.Contains(body, `"doc.read"`) {
		t.Fatalf("another project's delegated /events: %d %s", code, body)
	}
	// The public route still wants a bearer key: delegation is reachable only in-process.
	if code, _ := s.doAs("", http.MethodGet, "/api/v1/events", ""); code != http.StatusUnauthorized {
		t.Fatalf("/api/v1/events without a key: %d", code)
	}
}
