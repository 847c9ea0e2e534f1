package httpapi

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"
)

// TestDispatchExactRoutes: the routes served from the map answer as the router did.
// The route's own method and clean path reach the handler and are counted under the
// route; another method is 405 with Allow; a path the router would not match as the
// route (a trailing slash, a doubled slash, another case) gets the router's answer.
func TestDispatchExactRoutes(t *testing.T) {
	s := newStack(t, "sqlite", 10, 0)
	if len(s.srv.exact) != 9 {
		t.Fatalf("%d exact routes, want the 9 API routes without path variables", len(s.srv.exact))
	}
	for path, want := range map[string]bool{"/api/v1/log": true, "/api/v1/log/batch": true, "/api/v1/proof/inclusion": true,
		"/api/v1/log/": false, "/api/v1//log": false, "/api/v1/tlog/events/checkpoint": false, "/api/v1/key-history": false, "/healthz": false} {
		if got := s.srv.ExactRoute(path); got != want {
			t.Errorf("ExactRoute(%q) = %v, want %v", path, got, want)
		}
	}
	count := func(route, method, class string) float64 {
		t.Helper()
		_, text := s.do(http.MethodGet, "/metrics", "")
		re := regexp.MustCompile(`(?m)^sealtrail_http_requests_total\{method="` + method + `",route="` + regexp.QuoteMeta(route) + `",status="` + class + `"\} (\S+)$`)
		m := re.FindStringSubmatch(text)
		if m == nil {
			return 0
		}
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count("/api/v1/log", http.MethodPost, "2xx")
	if code, body := s.do(http.MethodPost, "/api/v1/log", `{"action":"a","actor":{"type":"u","id":"1"}}`); code != http.StatusAccepted {
		t.Fatalf("POST /api/v1/log: %d %s", code, body)
	}
	if got := count("/api/v1/log", http.MethodPost, "2xx"); got != before+1 {
		t.Fatalf("requests counted under /api/v1/log: %v, want %v", got, before+1)
	}
	for _, tc := range []struct {
		method, target string
		want           int
	}{
		{http.MethodGet, "/api/v1/log", http.StatusMethodNotAllowed},
		{http.MethodPost, "/api/v1/proof/inclusion", http.StatusMethodNotAllowed},
		{http.MethodPost, "/api/v1/log/", http.StatusNotFound},
		{http.MethodPost, "/api/v1//log", http.StatusMovedPermanently},
		{http.MethodPost, "/API/v1/log", http.StatusNotFound},
	} {
		code, body := s.do(tc.method, tc.target, `{"action":"a","actor":{"type":"u","id":"1"}}`)
		if code != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.target, code, body, tc.want)
		}
	}
	if code, body := s.do(http.MethodGet, "/api/v1/root", ""); code != http.StatusOK {
		t.Fatalf("GET /api/v1/root: %d %s", code, body)
	}
}
