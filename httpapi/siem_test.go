package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSIEMAdmin drives /admin/v1/projects/{project}/siem-destinations on both
// catalogs: create, list, get, pause, resume, delete, each audited; bad input is a 4xx
// with a JSON error and changes nothing.
func TestSIEMAdmin(t *testing.T) {
	for _, kind := range catalogKinds {
		t.Run(kind, func(t *testing.T) {
			s := newStack(t, kind, 100, time.Millisecond)
			base := "/admin/v1/projects/" + s.project + "/siem-destinations"
			op := func(method, target, body string) (int, map[string]any) {
				t.Helper()
				code, raw := s.doAs(stackOperatorToken, method, target, body)
				var m map[string]any
				if err := json.Unmarshal([]byte(raw), &m); err != nil {
					t.Fatalf("%s %s: non-JSON answer %d %q", method, target, code, raw)
				}
				return code, m
			}
			auditSize := func() float64 {
				code, raw := s.do(http.MethodGet, "/api/v1/root?stream=project-audit", "")
				if code != http.StatusOK {
					t.Fatalf("root: %d %s", code, raw)
				}
				var root struct {
					STH struct {
						TreeSize float64 `json:"treeSize"`
					} `json:"sth"`
				}
				if err := json.Unmarshal([]byte(raw), &root); err != nil {
					t.Fatal(err)
				}
				return root.STH.TreeSize
			}
			before := auditSize()
			for _, bad := range []struct{ body, want string }{
				{`{"name":"x","kind":"ftp","settings":{}}`, "kind"},
				{`{"name":"x","kind":"webhook","settings":{"url":"http://plain.example"}}`, "https"},
				{`{"name":"x","kind":"webhook","settings":{"url":"https://h.example","secret":"nope"}}`, "whsec_"},
				{`{"name":"x","kind":"hec","settings":{"url":"https://h.example"}}`, "token"},
				{`{"name":"x","kind":"syslog","settings":{"address":"no-port"}}`, "host:port"},
				{`{"name":"x","kind":"syslog","format":"xml","settings":{"address":"h:6514"}}`, "format"},
				{`{"name":"x","kind":"syslog","stream":"other","settings":{"address":"h:6514"}}`, "stream"},
				{`{"name":"x","kind":"syslog","settings":{"address":"h:6514","caCert":"junk"}}`, "caCert"},
				{`{"name":"x","kind":"syslog","settings":{"address":"h:6514"},"extra":1}`, "unknown field"},
				{`{"name":"","kind":"syslog","settings":{"address":"h:6514"}}`, "name"},
				{`{"name":"x","kind":"syslog","from":"yesterday","settings":{"address":"h:6514"}}`, "from"},
				{`[`, "Invalid JSON"},
			} {
				code, m := op(http.MethodPost, base, bad.body)
				if code != http.StatusBadRequest || !strings.Contains(m["error"].(string), bad.want) {
					t.Errorf("%s: %d %v, want 400 naming %q", bad.body, code, m, bad.want)
				}
			}
			if code, _ := op(http.MethodGet, "/admin/v1/projects/prj_missing/siem-destinations", ""); code != http.StatusNotFound {
				t.Errorf("unknown project list: %d", code)
			}
			if code, _ := op(http.MethodPost, "/admin/v1/projects/prj_missing/siem-destinations",
				`{"name":"x","kind":"syslog","settings":{"address":"h:6514"}}`); code != http.StatusNotFound {
				t.Errorf("unknown project create: %d", code)
			}
			if after := auditSize(); after != before {
				t.Fatalf("bad input changed the audit stream: %v to %v", before, after)
			}

			code, m := op(http.MethodPost, base, `{"name":"soc","kind":"webhook","format":"cef","settings":{"url":"https://siem.example/hook"}}`)
			if code != http.StatusCreated || !strings.HasPrefix(m["secret"].(string), "whsec_") {
				t.Fatalf("create: %d %v", code, m)
			}
			d := m["destination"].(map[string]any)
			id := d["id"].(string)
			if d["state"] != "active" || d["cursor"].(float64) != 0 || d["settings"].(map[string]any)["secret"] != "(set)" {
				t.Fatalf("created %v", d)
			}
			if code, m = op(http.MethodGet, base, ""); code != http.StatusOK || len(m["destinations"].([]any)) != 1 {
				t.Fatalf("list: %d %v", code, m)
			}
			if code, m = op(http.MethodPost, base+"/"+id+"/pause", ""); code != http.StatusOK || m["state"] != "paused" {
				t.Fatalf("pause: %d %v", code, m)
			}
			if code, _ = op(http.MethodPost, base+"/"+id+"/pause", ""); code != http.StatusConflict {
				t.Fatalf("pause twice: %d", code)
			}
			if code, m = op(http.MethodPost, base+"/"+id+"/resume", ""); code != http.StatusOK || m["state"] != "active" {
				t.Fatalf("resume: %d %v", code, m)
			}
			if code, m = op(http.MethodGet, base+"/"+id, ""); code != http.StatusOK || m["id"] != id {
				t.Fatalf("get: %d %v", code, m)
			}
			if code, _ = op(http.MethodPut, base+"/"+id, ""); code != http.StatusMethodNotAllowed {
				t.Fatalf("PUT: %d", code)
			}
			if code, _ = op(http.MethodDelete, base+"/"+id, ""); code != http.StatusOK {
				t.Fatalf("delete: %d", code)
			}
			if code, _ = op(http.MethodGet, base+"/"+id, ""); code != http.StatusNotFound {
				t.Fatalf("get deleted: %d", code)
			}
			// created, paused, resumed, deleted: four audit records.
			if after := auditSize(); after != before+4 {
				t.Fatalf("audit stream grew from %v to %v, want +4", before, after)
			}
			if code, _ := s.doAs("wrong-token", http.MethodGet, base, ""); code != http.StatusUnauthorized {
				t.Fatalf("wrong token: %d", code)
			}
		})
	}
}
