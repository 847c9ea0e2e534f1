package integration

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// TestAPISuspensionCLI drives billing suspension and the retention settings through
// `sealtraild admin` against the real service: a suspended project's ingest gets 429
// with the reason and Retry-After, its reads work, and every change is audited.
func TestAPISuspensionCLI(t *testing.T) {
	t.Parallel()
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		s := startServer(t, serveOpts{env: c.env()})
		p := s.newProject("suspend")
		cli := func(want int, args ...string) cliResult {
			t.Helper()
			r := runBin(t, sealtraild, t.TempDir(), append([]string{"admin", "--server", s.base, "--token", s.token, "--actor", "ops"}, args...)...)
			if r.code != want {
				t.Fatalf("admin %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
			}
			return r
		}
		s.mustPost(p.all, event("before", "alice"))
		cli(2, "project", "suspend", "--project", p.id)
		cli(0, "project", "suspend", "--project", p.id, "--reason", "invoice_overdue")
		for _, path := range []string{"/log", "/log/batch"} {
			var body any = event("during", "alice")
			if path == "/log/batch" {
				body = map[string]any{"events": []any{event("during", "alice")}}
			}
			r := s.api(http.MethodPost, path, p.all, body)
			if r.status != http.StatusTooManyRequests || r.str("reason") != "invoice_overdue" || r.header.Get("Retry-After") != "3600" {
				t.Fatalf("POST %s while suspended: %d %v %s", path, r.status, r.header, r.raw)
			}
		}
		s.mustGet(p.all, "/events")
		cli(0, "project", "unsuspend", "--project", p.id)
		cli(1, "project", "unsuspend", "--project", p.id)
		s.mustPost(p.all, event("after", "alice"))

		cli(0, "retention", "set", "--project", p.id, "--days", "30")
		cli(0, "retention", "clear", "--project", p.id)
		if r := cli(0, "retention", "list", "--project", p.id); strings.Contains(r.stdout, "30") {
			t.Fatalf("retention after clear:\n%s", r.stdout)
		}
		cli(0, "retention", "minimum", "--project", p.id, "--days", "90")
		if r := cli(0, "retention", "minimum", "--project", p.id); !strings.Contains(r.stdout, "90") {
			t.Fatalf("minimum:\n%s", r.stdout)
		}
		s.stop()
		o := openOffline(t, s.dataDir, c.dsn)
		var actions []string
		for _, r := range o.payloads(t, p.id, catalog.StreamProjectAudit) {
			a, _ := r["action"].(string)
			actions = append(actions, a)
		}
		for _, action := range []string{"project.suspended", "project.unsuspended", "retention.cleared", "retention.minimum.set"} {
			if !slices.Contains(actions, action) {
				t.Fatalf("project_audit lacks %s: %v", action, actions)
			}
		}
	})
}
