package integration

import (
	"net/http"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// TestPublicRead: a project's tlog-tiles path is served without an API key only while
// the operator has turned its public read mode on, never its payloads and never
// another project's; the change is recorded in the project_audit stream.
func TestPublicRead(t *testing.T) {
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		s := startServer(t, serveOpts{env: c.env()})
		p, other := s.newProject("mirrored"), s.newProject("private")
		for _, pr := range []*apiProject{p, other} {
			s.mustLog(pr.key["log:write"], "public.read")
			s.mustLog(pr.key["log:write"], "public.read")
		}
		get := func(path string) response {
			return call(t, http.MethodGet, s.base+"/public/v1/"+path, "", nil)
		}
		wantError(t, "checkpoint while the mode is off", get(p.id+"/events/checkpoint"), http.StatusNotFound, "Not found")
		wantError(t, "unknown project", get("prj_nothere/events/checkpoint"), http.StatusNotFound, "Not found")

		auditBefore := s.sth(p.all, "project-audit").TreeSize
		if r := s.admin("ops", "project", "public-read", "--project", p.id, "--enabled", "maybe"); r.code != 2 {
			t.Fatalf("--enabled maybe: exit %d, want 2", r.code)
		}
		s.mustCLI("ops", "project", "public-read", "--project", p.id, "--enabled", "true")
		cp := get(p.id + "/events/checkpoint")
		keys := call(t, http.MethodGet, s.base+"/api/v1/checkpoint-key?projectId="+p.id, "", nil)
		vkey, _ := keys.body["stream"].(map[string]any)["verifierKey"].(string)
		v, err := note.NewVerifier(vkey)
		if err != nil {
			t.Fatalf("stream verifier key %q: %v", vkey, err)
		}
		n, err := note.Open([]byte(cp.raw), note.VerifierList(v))
		if cp.status != http.StatusOK || err != nil || !strings.HasSuffix(strings.Split(n.Text, "\n")[0], p.id+"/events") {
			t.Fatalf("public checkpoint: %d %q, %v", cp.status, cp.raw, err)
		}
		if r := get(p.id + "/events/tile/entries/000.p/2"); r.status != http.StatusOK || len(r.raw) == 0 {
			t.Fatalf("public entry bundle: %d", r.status)
		}
		wantError(t, "a payload path", get(p.id+"/events/payload/1-x"), http.StatusNotFound, "")
		wantError(t, "another project", get(other.id+"/events/checkpoint"), http.StatusNotFound, "Not found")
		wantError(t, "a bad stream", get(p.id+"/nope/checkpoint"), http.StatusBadRequest, "")

		s.mustCLI("ops", "project", "public-read", "--project", p.id, "--enabled", "false")
		wantError(t, "checkpoint after turning it off", get(p.id+"/events/checkpoint"), http.StatusNotFound, "Not found")
		if after := s.sth(p.all, "project-audit").TreeSize; after != auditBefore+2 {
			t.Fatalf("project_audit grew from %d to %d, want one record per change of the mode", auditBefore, after)
		}
		s.stop()
	})
}
