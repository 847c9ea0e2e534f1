package integration

import (
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tlog"
)

// TestProjectAuditRecordsEveryChange makes every kind of control-plane change, half
// through the admin CLI (--actor) and half through the operator API
// (X-Sealtrail-Actor), then stops the service and, from its storage alone, rebuilds
// the project_audit stream (valid) and reads it: one sealed record per change, in
// order, each naming its actor and its subject.
func TestProjectAuditRecordsEveryChange(t *testing.T) {
	t.Parallel()
	s := startServer(t, serveOpts{})

	type want struct{ action, actor, target string }
	var wants []want
	expect := func(action, actor, target string) { wants = append(wants, want{action, actor, target}) }

	p := s.mustCLI("alice", "project", "create", "--name", "acme")
	pid, _ := p["id"].(string)
	expect("project.created", "alice", pid)

	// API keys: one made through the API, one through the CLI; each revoked the other way.
	k1 := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+pid+"/keys", "bob",
		map[string]any{"scopes": []string{"log:write", "log:read"}, "name": "ingest"})
	key1 := k1.body["key"].(map[string]any)["id"].(string)
	expect("api_key.created", "bob", key1)
	exp := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	k2 := s.mustCLI("alice", "key", "create", "--project", pid, "--scopes", "log:verify", "--name", "auditor", "--expires", exp)
	key2 := k2["key"].(map[string]any)["id"].(string)
	expect("api_key.created", "alice", key2)
	evt := s.mustLog(k1.str("secret"), "user.login")

	s.mustCLI("alice", "member", "add", "--project", pid, "--email", "carol@example.com", "--role", "admin")
	expect("member.added", "alice", "carol@example.com")
	s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+pid+"/members", "bob",
		map[string]string{"email": "dan@example.com", "role": "auditor"})
	expect("member.added", "bob", "dan@example.com")
	s.mustAdmin(http.StatusOK, http.MethodDelete, "/projects/"+pid+"/members/carol@example.com", "bob", nil)
	expect("member.removed", "bob", "carol@example.com")
	s.mustCLI("alice", "member", "remove", "--project", pid, "--email", "dan@example.com")
	expect("member.removed", "alice", "dan@example.com")

	s.mustCLI("alice", "retention", "set", "--project", pid, "--days", "30")
	expect("retention.set", "alice", "events")
	s.mustAdmin(http.StatusOK, http.MethodPut, "/projects/"+pid+"/retention", "bob", map[string]any{"stream": "project-audit", "days": 3650})
	expect("retention.set", "bob", "project_audit")

	h1 := s.mustCLI("alice", "hold", "create", "--project", pid, "--event", evt, "--reason", "litigation")
	hold1, _ := h1["holdId"].(string)
	expect("legal_hold.created", "alice", hold1)
	h2 := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+pid+"/holds", "bob", map[string]any{"eventIds": []string{evt}})
	hold2 := h2.str("holdId")
	expect("legal_hold.created", "bob", hold2)
	s.mustAdmin(http.StatusOK, http.MethodPost, "/projects/"+pid+"/holds/"+hold1+"/release", "bob", nil)
	expect("legal_hold.released", "bob", hold1)
	s.mustCLI("alice", "hold", "release", "--project", pid, "--hold", hold2)
	expect("legal_hold.released", "alice", hold2)

	s.mustCLI("alice", "key", "revoke", "--project", pid, "--key", key1)
	expect("api_key.revoked", "alice", key1)
	s.mustAdmin(http.StatusOK, http.MethodPost, "/projects/"+pid+"/keys/"+key2+"/revoke", "bob", nil)
	expect("api_key.revoked", "bob", key2)

	pub1, _, _ := tlog.GenerateKey()
	pub2, _, _ := tlog.GenerateKey()
	sk1 := s.mustCLI("alice", "signing-key", "add", "--project", pid, "--public-key", hex.EncodeToString(pub1))
	skID1, _ := sk1["id"].(string)
	expect("signing_key.registered", "alice", skID1)
	sk2 := s.mustAdmin(http.StatusCreated, http.MethodPost, "/projects/"+pid+"/signing-keys", "bob",
		map[string]string{"publicKey": hex.EncodeToString(pub2)})
	skID2 := sk2.str("id")
	expect("signing_key.registered", "bob", skID2)
	s.mustAdmin(http.StatusOK, http.MethodPost, "/projects/"+pid+"/signing-keys/"+skID1+"/revoke", "bob", nil)
	expect("signing_key.revoked", "bob", skID1)
	s.mustCLI("alice", "signing-key", "revoke", "--project", pid, "--key", skID2)
	expect("signing_key.revoked", "alice", skID2)

	// Without an actor the API records "operator".
	s.mustAdmin(http.StatusOK, http.MethodPut, "/projects/"+pid+"/retention", "", map[string]any{"days": 90})
	expect("retention.set", "operator", "events")

	if got := waitCheckpointSize(t, s.dataDir, s.pub, pid, catalog.StreamProjectAudit, uint64(len(wants))); got != uint64(len(wants)) {
		t.Fatalf("live project_audit checkpoint size %d, want %d", got, len(wants))
	}
	s.stop()

	o := openOffline(t, s.dataDir, "")
	o.rebuild(t, pid, catalog.StreamProjectAudit, uint64(len(wants)))
	o.rebuild(t, pid, catalog.StreamEvents, 1)
	recs := o.payloads(t, pid, catalog.StreamProjectAudit)
	for i, w := range wants {
		r := recs[i]
		actor, _ := r["actor"].(map[string]any)
		target, _ := r["target"].(map[string]any)
		if r["action"] != w.action || r["status"] != "success" || actor["type"] != "operator" || actor["id"] != w.actor ||
			target["id"] != w.target {
			t.Errorf("record %d = %v by %v on %v (%v), want %s by operator %s on %s (success)",
				i+1, r["action"], actor, target, r["status"], w.action, w.actor, w.target)
		}
	}
	if m, _ := recs[1]["metadata"].(map[string]any); m["name"] != "ingest" || m["prefix"] == nil {
		t.Errorf("api_key.created metadata %v lacks the key's name and prefix", m)
	}
	if m, _ := recs[9]["metadata"].(map[string]any); m["reason"] != "litigation" || m["membershipRoot"] == nil {
		t.Errorf("legal_hold.created metadata %v lacks the reason and the membership root", m)
	}
}
