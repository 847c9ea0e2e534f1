package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// apiEndpoint is one public route, with a request that succeeds given the right scope.
type apiEndpoint struct {
	method, path, scope string
	body                any
}

// endpoints lists every /api/v1 route of the spec (and the tlog read path) with a
// request that answers 2xx for a key holding scope; eventID and holdID are of p.
func endpoints(eventID, holdID string) []apiEndpoint {
	return []apiEndpoint{
		{http.MethodPost, "/log", catalog.ScopeWrite, event("status.probe", "alice")},
		{http.MethodGet, "/events", catalog.ScopeRead, nil},
		{http.MethodGet, "/legal-holds/" + holdID + "/proof?eventId=" + eventID, catalog.ScopeRead, nil},
		{http.MethodGet, "/export?format=json", catalog.ScopeExport, nil},
		{http.MethodGet, "/verify", catalog.ScopeVerify, nil},
		{http.MethodGet, "/root", catalog.ScopeVerify, nil},
		{http.MethodGet, "/proof/inclusion?eventId=" + eventID, catalog.ScopeVerify, nil},
		{http.MethodGet, "/proof/consistency?oldSize=1", catalog.ScopeVerify, nil},
		{http.MethodGet, "/anchors", catalog.ScopeVerify, nil},
		{http.MethodGet, "/tlog/events/checkpoint", catalog.ScopeVerify, nil},
		{http.MethodGet, "/tlog/events/tile/0/000.p/2", catalog.ScopeVerify, nil},
	}
}

// TestAPIAuthStatusRows covers the Authentication table for every endpoint: 401 for a
// missing, unknown, revoked and expired key, 403 with the exact body for each key that
// lacks the endpoint's scope, 405 for another method, and 2xx for the key that holds
// the scope.
func TestAPIAuthStatusRows(t *testing.T) {
	t.Parallel()
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		s := startServer(t, serveOpts{env: c.env()})
		p := s.newProject("auth")
		ids := []string{s.mustLog(p.key[catalog.ScopeWrite], "a"), s.mustLog(p.key[catalog.ScopeWrite], "b")}
		hold := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+p.id+"/holds", "ops",
			map[string]any{"eventIds": ids, "reason": "case 1"}).str("holdId")
		revoked, revokedID := s.newKey(p.id, allScopes, "")
		s.mustAdmin(http.StatusOK, http.MethodPost, "/projects/"+p.id+"/keys/"+revokedID+"/revoke", "ops", nil)
		expiresAt := time.Now().Add(4 * time.Second).UTC().Truncate(time.Millisecond)
		expiring, _ := s.newKey(p.id, allScopes, expiresAt.Format(time.RFC3339Nano))

		eps := endpoints(ids[0], hold)
		// The expiring key works before its expiry.
		if r := s.api(http.MethodGet, "/root", expiring, nil); r.status != http.StatusOK {
			t.Fatalf("key before its expiry: %d %s", r.status, r.raw)
		}
		for _, ep := range eps {
			what := ep.method + " " + ep.path
			wantError(t, what+" without a key", s.api(ep.method, ep.path, "", ep.body), http.StatusUnauthorized, "Missing API key")
			r := call(t, ep.method, s.base+"/api/v1"+ep.path, "", ep.body, "Authorization", "Basic "+p.all)
			wantError(t, what+" with a Basic credential", r, http.StatusUnauthorized, "Missing API key")
			wantError(t, what+" with an unknown key", s.api(ep.method, ep.path, "st_unknown", ep.body), http.StatusUnauthorized, "Invalid API key")
			wantError(t, what+" with a revoked key", s.api(ep.method, ep.path, revoked, ep.body), http.StatusUnauthorized, "Invalid API key")
			for _, sc := range allScopes {
				if sc == ep.scope {
					continue
				}
				r := s.api(ep.method, ep.path, p.key[sc], ep.body)
				want := fmt.Sprintf(`{"error":"API key missing %s scope"}`, ep.scope)
				if r.status != http.StatusForbidden || strings.TrimSpace(r.raw) != want {
					t.Fatalf("%s with a %s key: %d %s, want 403 %s", what, sc, r.status, r.raw, want)
				}
			}
			// Another method is 405 with Allow.
			r = s.api(http.MethodDelete, ep.path, p.all, nil)
			if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != ep.method || r.str("error") != "Method not allowed" {
				t.Fatalf("DELETE %s: %d %v %s, want 405 with Allow: %s", ep.path, r.status, r.header.Get("Allow"), r.raw, ep.method)
			}
			r = s.api(ep.method, ep.path, p.key[ep.scope], ep.body)
			if r.status/100 != 2 {
				t.Fatalf("%s with a %s key: %d %s, want 2xx", what, ep.scope, r.status, r.raw)
			}
		}
		time.Sleep(time.Until(expiresAt) + 100*time.Millisecond)
		for _, ep := range eps {
			wantError(t, ep.method+" "+ep.path+" with an expired key", s.api(ep.method, ep.path, expiring, ep.body),
				http.StatusUnauthorized, "Invalid API key")
		}
		s.stop()
	})
}

// TestAPIIngestRejections covers every 400 of POST /log; each rejection leaves the tree
// as it was.
func TestAPIIngestRejections(t *testing.T) {
	t.Parallel()
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		s := startServer(t, serveOpts{env: c.env()})
		open := s.newProject("unsigned")
		signed := s.newProject("signed")
		keyID, priv := s.addSigningKey(signed.id)
		oldKeyID, oldPriv := s.addSigningKey(signed.id)
		s.mustAdmin(http.StatusOK, http.MethodPost, "/projects/"+signed.id+"/signing-keys/"+oldKeyID+"/revoke", "ops", nil)
		s.mustPost(signed.all, signedEvent(t, priv, keyID, event("signed.ok", "alice")))
		s.mustPost(open.all, event("open.ok", "alice"))

		without := func(m map[string]any, drop ...string) map[string]any {
			out := map[string]any{}
			for k, v := range m {
				if !slices.Contains(drop, k) {
					out[k] = v
				}
			}
			return out
		}
		good := signedEvent(t, priv, keyID, event("signed", "alice"))
		forged := signedEvent(t, priv, keyID, event("signed", "alice"))
		forged["action"] = "signed.changed"
		unknownKey := signedEvent(t, priv, "sk_unknown", event("signed", "alice"))
		cases := []struct {
			name string
			p    *apiProject
			body any
			msg  string
		}{
			{"invalid JSON", open, `{"action":"x","actor":`, ""},
			{"duplicate member", open, `{"action":"x","action":"y","actor":{"type":"u","id":"a"}}`, ""},
			{"not an object", open, `[1]`, "Invalid event"},
			{"signingKeyId without signature", signed, without(good, "signature"), "signingKeyId and signature must be sent together"},
			{"signature without signingKeyId", signed, without(good, "signingKeyId"), "signingKeyId and signature must be sent together"},
			{"signed without id", signed, without(good, "id"), "A signed event must carry its id and nonce"},
			{"signed without nonce", signed, without(good, "nonce"), "A signed event must carry its id and nonce"},
			{"unknown signing key", signed, unknownKey, "Unknown or revoked signing key"},
			{"revoked signing key", signed, signedEvent(t, oldPriv, oldKeyID, event("signed", "alice")), "Unknown or revoked signing key"},
			{"bad signature", signed, forged, "Signature does not verify"},
			{"unsigned on a signing project", signed, event("unsigned", "alice"), "This project requires signed events (signingKeyId and signature)"},
		}
		// 413 for a body over 1 MiB; 409 for a signed id reused with other content; the
		// identical signed event sent again is the same event (202, same id).
		big := fmt.Sprintf(`{"action":"big","actor":{"type":"u","id":"a"},"context":{"pad":%q}}`, strings.Repeat("x", 1<<20))
		wantError(t, "body over 1 MiB", s.api(http.MethodPost, "/log", open.all, big), http.StatusRequestEntityTooLarge, "")
		first := signedEvent(t, priv, keyID, event("signed.once", "alice"))
		if id := s.mustPost(signed.all, first); id != first["id"] {
			t.Fatalf("signed event sealed as %s, want its own id %s", id, first["id"])
		}
		if id := s.mustPost(signed.all, first); id != first["id"] {
			t.Fatalf("signed retry answered %s, want %s", id, first["id"])
		}
		reused := signedEventWithID(t, priv, keyID, first["id"].(string), event("signed.other", "alice"))
		wantError(t, "signed id reused", s.api(http.MethodPost, "/log", signed.all, reused), http.StatusConflict, "")

		before := map[string]uint64{open.id: s.sth(open.all, "events").TreeSize, signed.id: s.sth(signed.all, "events").TreeSize}
		for _, tc := range cases {
			r := s.api(http.MethodPost, "/log", tc.p.all, tc.body)
			wantError(t, tc.name, r, http.StatusBadRequest, tc.msg)
			if tc.name == "invalid JSON" && !strings.HasPrefix(r.str("error"), "Invalid JSON") {
				t.Fatalf("invalid JSON: %s", r.raw)
			}
		}

		// A schema failure names each bad field once, in details [{field, message}].
		r := s.api(http.MethodPost, "/log", open.all, map[string]any{
			"action": "", "actor": map[string]any{"type": "user"}, "risk": "extreme", "bogus": 1,
			"status": "done", "context": "text", "target": map[string]any{"type": strings.Repeat("t", 129), "id": "x"},
		})
		wantError(t, "schema failure", r, http.StatusBadRequest, "Invalid event")
		var body struct {
			Details []struct{ Field, Message string } `json:"details"`
		}
		if err := json.Unmarshal([]byte(r.raw), &body); err != nil {
			t.Fatal(err)
		}
		var fields []string
		for _, d := range body.Details {
			if d.Message == "" {
				t.Fatalf("detail without a message: %s", r.raw)
			}
			fields = append(fields, d.Field)
		}
		want := []string{"action", "actor.id", "bogus", "context", "risk", "status", "target.type"}
		if !slices.Equal(fields, want) {
			t.Fatalf("details fields %q, want %q (one per field): %s", fields, want, r.raw)
		}
		// A null required member is reported once, not also as missing.
		r = s.api(http.MethodPost, "/log", open.all, `{"action":null,"actor":null,"risk":null}`)
		wantError(t, "null members", r, http.StatusBadRequest, "Invalid event")
		if err := json.Unmarshal([]byte(r.raw), &body); err != nil {
			t.Fatal(err)
		}
		fields = fields[:0]
		for _, d := range body.Details {
			fields = append(fields, d.Field)
		}
		if want := []string{"action", "actor", "risk"}; !slices.Equal(fields, want) {
			t.Fatalf("details fields %q, want %q (one per field): %s", fields, want, r.raw)
		}

		for pid, size := range before {
			tok := open.all
			if pid == signed.id {
				tok = signed.all
			}
			if got := s.sth(tok, "events").TreeSize; got != size {
				t.Fatalf("project %s: rejected ingests moved the tree from %d to %d", pid, size, got)
			}
		}
		s.stop()
	})
}

// TestAPIParameterRejections covers the 400 and 404 rows of the read endpoints:
// stream names, proof ranges, the hold proof, and invalid limits, cursors and times.
func TestAPIParameterRejections(t *testing.T) {
	t.Parallel()
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		s := startServer(t, serveOpts{env: c.env()})
		p := s.newProject("params")
		var ids []string
		for i := range 4 {
			ids = append(ids, s.mustLog(p.all, fmt.Sprint("e", i)))
		}
		hold := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+p.id+"/holds", "ops",
			map[string]any{"eventIds": ids[:2], "reason": "r"}).str("holdId")
		bad := []string{
			// stream other than events or project-audit, on every stream endpoint
			"/verify?stream=project_audit", "/root?stream=bogus", "/proof/inclusion?leafIndex=0&stream=Events",
			"/proof/consistency?oldSize=0&stream=x", "/anchors?stream=audit", "/tlog/bogus/checkpoint",
			// inclusion ranges
			"/proof/inclusion", "/proof/inclusion?leafIndex=4", "/proof/inclusion?leafIndex=0&treeSize=0",
			"/proof/inclusion?leafIndex=0&treeSize=5", "/proof/inclusion?leafIndex=2&treeSize=2",
			"/proof/inclusion?leafIndex=-1", "/proof/inclusion?eventId=" + ids[0] + "&treeSize=9",
			"/proof/inclusion?leafIndex=0&stream=project-audit&treeSize=999",
			// consistency ranges
			"/proof/consistency", "/proof/consistency?oldSize=x", "/proof/consistency?oldSize=3&newSize=2",
			"/proof/consistency?oldSize=5", "/proof/consistency?oldSize=1&newSize=5",
			// hold proof without eventId
			"/legal-holds/" + hold + "/proof",
			// events
			"/events?limit=0", "/events?limit=ten", "/events?cursor=garbage", "/events?from=yesterday",
			"/events?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "/events?entityType=user",
			"/events?entityId=alice", "/events?entityType=user&entityId=alice&direction=sideways",
			// export
			"/export?format=xml", "/export?max=0", "/export?max=-3", "/export?to=soon",
			// anchors
			"/anchors?limit=0", "/anchors?limit=many",
		}
		for _, q := range bad {
			wantError(t, "GET "+q, s.api(http.MethodGet, q, p.all, nil), http.StatusBadRequest, "")
		}
		notFound := []string{
			"/proof/inclusion?eventId=evt_00000000000000000000000000",
			"/proof/inclusion?eventId=" + ids[0] + "&stream=project-audit",
			"/legal-holds/hold_unknown/proof?eventId=" + ids[0],
			"/legal-holds/" + hold + "/proof?eventId=" + ids[3],
			"/legal-holds/" + hold + "/proof?eventId=evt_unknown",
			"/tlog/events/tile/0/001", "/tlog/events/tile/../../x", "/tlog/events/tile/0/000.p/3/../../payload",
		}
		for _, q := range notFound {
			wantError(t, "GET "+q, s.api(http.MethodGet, q, p.all, nil), http.StatusNotFound, "")
		}
		// Above the maximum, limits are capped, not refused.
		for _, q := range []string{"/events?limit=100000", "/anchors?limit=100000"} {
			s.mustGet(p.all, q)
		}
		s.stop()
	})
}

// breakPayloads makes the folder of the group payload objects (one per commit tick,
// shared by every stream) a file, so the payload object of the next tick cannot be
// written (chmod would not stop root); the returned func puts it back. Every stream's
// seals fail meanwhile, the project_audit stream's included: create keys before.
func (s *server) breakPayloads() (restore func()) {
	t := s.t
	t.Helper()
	payloadDir := filepath.Join(s.dataDir, "objects", "payload")
	aside := payloadDir + ".aside"
	if err := os.Rename(payloadDir, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(payloadDir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.Remove(payloadDir); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(aside, payloadDir); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAPIRateLimitAndSealFailure covers 429 (with Retry-After in seconds, per key,
// ingest only) and 500 (a failing store: nothing is recorded, the tree does not move,
// and after the store recovers the stream verifies).
func TestAPIRateLimitAndSealFailure(t *testing.T) {
	t.Parallel()
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		s := startServer(t, serveOpts{env: c.env("SEALTRAIL_RATE_LIMIT=5")})
		p := s.newProject("limits")
		// A token bucket of 5 refilling at 0.5 a second: a burst of 5 passes, the
		// sixth does not, unless the burst took longer than the 2 s one token takes
		// to come back (a loaded machine), when it is repeated with a fresh key.
		for attempt := 0; ; attempt++ {
			key, _ := s.newKey(p.id, allScopes, "")
			begin := time.Now()
			for i := range 5 {
				s.mustPost(key, event(fmt.Sprint("burst", i), "alice"))
			}
			r := s.api(http.MethodPost, "/log", key, event("burst.over", "alice"))
			if r.status != http.StatusTooManyRequests && attempt < 3 && time.Since(begin) > 2*time.Second {
				continue
			}
			wantError(t, "sixth ingest in the window", r, http.StatusTooManyRequests, "Rate limit exceeded")
			secs, err := strconv.Atoi(r.header.Get("Retry-After"))
			if err != nil || secs < 1 || secs > 10 {
				t.Fatalf("Retry-After %q, want whole seconds in [1, 10]", r.header.Get("Retry-After"))
			}
			// Per key and per ingest: another key of the project still writes, and
			// reads with the limited key are not limited.
			s.mustPost(p.key[catalog.ScopeWrite], event("other.key", "alice"))
			for range 8 {
				s.mustGet(key, "/events?limit=1")
			}
			break
		}

		// 500: the next batch's payload object cannot be written.
		sizeBefore := s.sth(p.all, "events").TreeSize
		if got := waitCheckpointSize(t, s.dataDir, s.pub, p.id, catalog.StreamEvents, sizeBefore); got != sizeBefore {
			t.Fatalf("checkpoint size %d, /root size %d", got, sizeBefore)
		}
		w2, _ := s.newKey(p.id, []string{catalog.ScopeWrite}, "")
		restore := s.breakPayloads()
		r := s.api(http.MethodPost, "/log", w2, event("doomed", "alice"))
		wantError(t, "ingest on a failing store", r, http.StatusInternalServerError, "Failed to seal event; nothing was recorded")
		if got := waitCheckpointSize(t, s.dataDir, s.pub, p.id, catalog.StreamEvents, sizeBefore); got != sizeBefore {
			t.Fatalf("checkpoint moved from %d to %d after a failed seal", sizeBefore, got)
		}
		if got := s.sth(p.all, "events").TreeSize; got != sizeBefore {
			t.Fatalf("/root size %d after a failed seal, want %d", got, sizeBefore)
		}
		evs := s.mustGet(p.all, "/events?action=doomed")
		if n := len(evs.body["events"].([]any)); n != 0 {
			t.Fatalf("a failed seal is listed: %s", evs.raw)
		}
		restore()
		s.mustPost(w2, event("recovered", "alice"))
		rec := s.receipt(p.all, "events")
		if !rec.Valid || rec.TreeSize != sizeBefore+1 || rec.FirstBreak != nil {
			t.Fatalf("after recovery: receipt %+v, want valid at size %d", rec, sizeBefore+1)
		}
		s.stop()
	})
}
