package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestAdminDigests: the operator reads and sets a project's digest schedule and its
// members' opt-ins; bad input is a 4xx with a JSON error and changes nothing.
func TestAdminDigests(t *testing.T) {
	s := newStack(t, "sqlite", 100, 0)
	base := "/admin/v1/projects/" + s.project
	op := func(method, target, body string) (int, digestsJSON, string) {
		t.Helper()
		code, raw := s.doAs(stackOperatorToken, method, target, body)
		var out digestsJSON
		if code == http.StatusOK {
			if err := json.Unmarshal([]byte(raw), &out); err != nil {
				t.Fatalf("%s %s: %v\n%s", method, target, err, raw)
			}
		} else if !strings.HasPrefix(raw, `{"error":`) {
			t.Fatalf("%s %s: %d without a JSON error: %s", method, target, code, raw)
		}
		return code, out, raw
	}
	if code, d, raw := op("GET", base+"/digests", ""); code != 200 || d.Schedule != "daily" || d.LastPeriod != nil || len(d.Recipients) != 0 {
		t.Fatalf("GET = %d %s", code, raw)
	}
	if code, raw := s.doAs(stackOperatorToken, "POST", base+"/members", `{"email":"ann@example.com","role":"auditor"}`); code != 201 {
		t.Fatalf("add member = %d %s", code, raw)
	}
	for _, c := range []struct {
		method, target, body string
		want                 int
	}{
		{"PUT", base + "/digests", `{"schedule":"hourly"}`, 400},
		{"PUT", base + "/digests", `{"schedule":"weekly","x":1}`, 400},
		{"PUT", base + "/digests", `not json`, 400},
		{"PUT", base + "/digests/members/ann@example.com", `{}`, 400},
		{"PUT", base + "/digests/members/ann@example.com", `{"optIn":"yes"}`, 400},
		{"PUT", base + "/digests/members/nobody@example.com", `{"optIn":true}`, 404},
		{"PUT", "/admin/v1/projects/prj_nope/digests", `{"schedule":"weekly"}`, 404},
		{"GET", "/admin/v1/projects/prj_nope/digests", ``, 404},
		{"DELETE", base + "/digests", ``, 405},
	} {
		if code, _, raw := op(c.method, c.target, c.body); code != c.want {
			t.Errorf("%s %s %s = %d %s, want %d", c.method, c.target, c.body, code, raw, c.want)
		}
	}
	if code, _, _ := op("GET", base+"/digests", ""); code != 200 {
		t.Fatal(code)
	}
	if code, d, raw := op("GET", base+"/digests", ""); code != 200 || d.Schedule != "daily" || len(d.Recipients) != 0 {
		t.Fatalf("bad input changed the settings: %s", raw)
	}
	if code, d, raw := op("PUT", base+"/digests", `{"schedule":"weekly"}`); code != 200 || d.Schedule != "weekly" {
		t.Fatalf("PUT weekly = %d %s", code, raw)
	}
	if code, d, raw := op("PUT", base+"/digests/members/ANN@example.com", `{"optIn":true}`); code != 200 || len(d.Recipients) != 1 || d.Recipients[0] != "ann@example.com" {
		t.Fatalf("opt in = %d %s", code, raw)
	}
	if code, _ := s.doAs(s.token, "GET", base+"/digests", ""); code != http.StatusUnauthorized {
		t.Fatalf("an API key read the operator API: %d", code)
	}
}
