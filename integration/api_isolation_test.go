package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPICrossProjectIsolation gives a key of project A every identifier of project B
// that an attacker could learn or guess (event ids, hold ids, cursors, leaf indexes and
// sizes inside B's tree, tile paths, B's signing key) on every endpoint. Every answer
// is an error or A's own data, and no answer contains anything of B.
func TestAPICrossProjectIsolation(t *testing.T) {
	t.Parallel()
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		s := startServer(t, serveOpts{env: c.env()})
		a, b := s.newProject("tenant-a"), s.newProject("tenant-b")
		var aIDs, bIDs []string
		for range 3 {
			aIDs = append(aIDs, s.mustPost(a.all, map[string]any{"action": "a.act", "actor": map[string]any{"type": "user", "id": "alice-a"}}))
		}
		bKeyID, bPriv := s.addSigningKey(b.id)
		for range 6 {
			bIDs = append(bIDs, s.mustPost(b.all, signedEvent(t, bPriv, bKeyID, map[string]any{"action": "b.secret",
				"actor": map[string]any{"type": "user", "id": "bob-b"}, "target": map[string]any{"type": "doc", "id": "doc-b"}})))
		}
		aHold := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+a.id+"/holds", "ops",
			map[string]any{"eventIds": aIDs[:1], "reason": "a"}).str("holdId")
		bHold := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+b.id+"/holds", "ops",
			map[string]any{"eventIds": bIDs, "reason": "b"}).str("holdId")

		// Everything of B that must never reach A.
		secrets := []string{b.id, bKeyID, bHold, "b.secret", "bob-b", "doc-b"}
		secrets = append(secrets, bIDs...)
		bPage := s.events(b.all, "?limit=2")
		if bPage.NextCursor == nil {
			t.Fatal("B's first page has no cursor")
		}
		for _, e := range s.events(b.all, "").Events {
			checkStored(t, e, b.id, true)
			secrets = append(secrets, e.LeafHash, e.PayloadHash, *e.ClientSignature)
		}
		for _, st := range []string{"events", "project-audit"} {
			secrets = append(secrets, s.sth(b.all, st).RootHash)
		}
		bSize := s.sth(b.all, "events").TreeSize
		if bSize != 6 {
			t.Fatalf("B's size %d", bSize)
		}

		type probe struct {
			method, path string
			body         any
			want         int // 0: 2xx with A's data only
		}
		probes := []probe{
			{http.MethodGet, "/events?cursor=" + *bPage.NextCursor, nil, http.StatusBadRequest},
			{http.MethodGet, "/events?limit=2&cursor=" + *bPage.NextCursor, nil, http.StatusBadRequest},
			{http.MethodGet, "/events?actorId=bob-b", nil, 0},
			{http.MethodGet, "/events?targetId=doc-b", nil, 0},
			{http.MethodGet, "/events?action=b.secret", nil, 0},
			{http.MethodGet, "/events?entityType=user&entityId=bob-b", nil, 0},
			{http.MethodGet, "/events?entityType=doc&entityId=doc-b&direction=incoming", nil, 0},
			{http.MethodGet, "/events?limit=500", nil, 0},
			{http.MethodGet, "/export?format=json", nil, 0},
			{http.MethodGet, "/export?format=csv&action=b.secret", nil, 0},
			{http.MethodGet, "/verify", nil, 0},
			{http.MethodGet, "/verify?stream=project-audit", nil, 0},
			{http.MethodGet, "/root", nil, 0},
			{http.MethodGet, "/root?stream=project-audit", nil, 0},
			{http.MethodGet, "/anchors", nil, 0},
			{http.MethodGet, "/anchors?stream=project-audit", nil, 0},
			{http.MethodGet, "/proof/inclusion?leafIndex=1", nil, 0},
			{http.MethodGet, "/proof/consistency?oldSize=1", nil, 0},
			{http.MethodGet, "/tlog/events/checkpoint", nil, 0},
			{http.MethodGet, "/tlog/events/tile/0/000.p/3", nil, 0},
			{http.MethodGet, "/tlog/events/tile/0/000.p/6", nil, http.StatusNotFound},
			{http.MethodGet, "/tlog/events/tile/entries/000.p/6", nil, http.StatusNotFound},
			{http.MethodGet, "/tlog/events/tile/0/000.p/3/../../../../" + b.id + "/events/checkpoint", nil, -1},
			{http.MethodGet, "/tlog/events/tile/0/000.p/3%2F..%2F..%2F..%2F..%2F" + b.id + "%2Fevents%2Fcheckpoint", nil, -1},
			{http.MethodGet, "/tlog/" + b.id + "/checkpoint", nil, http.StatusBadRequest},
			{http.MethodGet, "/proof/inclusion?leafIndex=4", nil, http.StatusBadRequest},
			{http.MethodGet, "/proof/inclusion?leafIndex=0&treeSize=6", nil, http.StatusBadRequest},
			{http.MethodGet, "/proof/consistency?oldSize=3&newSize=6", nil, http.StatusBadRequest},
			{http.MethodGet, "/proof/consistency?oldSize=6", nil, http.StatusBadRequest},
			{http.MethodPost, "/log", signedEvent(t, bPriv, bKeyID, event("forged.for.b", "alice-a")), http.StatusBadRequest},
		}
		for _, id := range bIDs {
			probes = append(probes,
				probe{http.MethodGet, "/proof/inclusion?eventId=" + id, nil, http.StatusNotFound},
				probe{http.MethodGet, "/proof/inclusion?eventId=" + id + "&stream=project-audit", nil, http.StatusNotFound},
				probe{http.MethodGet, "/legal-holds/" + bHold + "/proof?eventId=" + id, nil, http.StatusNotFound},
				probe{http.MethodGet, "/legal-holds/" + aHold + "/proof?eventId=" + id, nil, http.StatusNotFound},
			)
		}
		probes = append(probes, probe{http.MethodGet, "/legal-holds/" + bHold + "/proof?eventId=" + aIDs[0], nil, http.StatusNotFound})

		aSize := s.sth(a.all, "events").TreeSize
		for _, pr := range probes {
			what := fmt.Sprintf("A's key: %s %s", pr.method, pr.path)
			var r response
			if strings.HasPrefix(pr.path, "/export") {
				file := filepath.Join(t.TempDir(), "export")
				res, complete := s.download(a.all, pr.path, file)
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				r = response{status: res.StatusCode, raw: string(data)}
				if !complete {
					t.Fatalf("%s: incomplete", what)
				}
			} else {
				r = s.api(pr.method, pr.path, a.all, pr.body)
			}
			switch {
			case pr.want > 0 && r.status != pr.want:
				t.Fatalf("%s: %d %s, want %d", what, r.status, r.raw, pr.want)
			case pr.want == 0 && r.status/100 != 2:
				t.Fatalf("%s: %d %s, want 2xx", what, r.status, r.raw)
			case pr.want < 0 && r.status/100 == 2:
				t.Fatalf("%s: %d %s, want an error", what, r.status, r.raw)
			}
			// Only what the request did not itself carry can leak (an error may echo
			// the bad parameter back).
			sent, _ := json.Marshal(pr.body)
			var unsent []string
			for _, sec := range secrets {
				if !strings.Contains(pr.path+string(sent), sec) {
					unsent = append(unsent, sec)
				}
			}
			if leak := hasAny(r.raw, unsent); leak != "" {
				t.Fatalf("%s leaks %q of project B: %s", what, leak, r.raw)
			}
			if pr.want == 0 && r.body != nil {
				if pid, ok := r.body["projectId"]; ok && pid != a.id {
					t.Fatalf("%s: projectId %v", what, pid)
				}
			}
		}
		// A's tree did not move (the forged ingest was refused), and B's tree still
		// verifies with all of B's events.
		if got := s.sth(a.all, "events").TreeSize; got != aSize {
			t.Fatalf("A's tree moved from %d to %d", aSize, got)
		}
		if rec := s.receipt(b.all, "events"); !rec.Valid || rec.TreeSize != bSize || rec.ProjectID != b.id {
			t.Fatalf("B's receipt: %+v", rec)
		}
		// B's key is symmetric: it cannot reach A's hold or events either.
		for _, q := range []string{"/proof/inclusion?eventId=" + aIDs[0], "/legal-holds/" + aHold + "/proof?eventId=" + aIDs[0]} {
			wantError(t, "B's key: "+q, s.api(http.MethodGet, q, b.all, nil), http.StatusNotFound, "")
		}
		s.stop()
	})
}
