package client

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// TestServiceMethods: every method of the spec's table works against the real service,
// and everything the client verifies (heads, proofs, receipts, rebuilt leaves) verifies.
func TestServiceMethods(t *testing.T) {
	s := realService(t)
	ctx := context.Background()
	store, err := NewFileHeadStore(filepath.Join(t.TempDir(), "pins"))
	if err != nil {
		t.Fatal(err)
	}
	var checkErrs []error
	c, err := New(Config{APIKey: s.apiKey, BaseURL: s.base + "/", HeadStore: store,
		OnCheckError: func(_ Stream, err error) { checkErrs = append(checkErrs, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Log: three events of one actor, with every kind of member.
	actor := "actor-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var ids []string
	for i := range 3 {
		res, err := c.Log(ctx, EventInput{Action: "doc.update", Actor: Entity{Type: "user", ID: actor, Display: "Alice"},
			Target: &Entity{Type: "doc", ID: "d" + strconv.Itoa(i)}, Risk: RiskLow, Context: map[string]any{"ip": "10.0.0.1"},
			Metadata: map[string]any{"i": i, "tags": []any{"a", "b"}}, AgentID: "agent-1", Model: "m-1", ToolName: "editor",
			ToolCallID: "call_" + strconv.Itoa(i), SessionID: "sess", InputHash: "abc"})
		if err != nil {
			t.Fatalf("Log: %v", err)
		}
		if res.Status != "sealed" || !strings.HasPrefix(res.ID, "evt_") {
			t.Fatalf("Log result %+v", res)
		}
		ids = append(ids, res.ID)
	}
	c.Wait()
	if pin, err := store.Load(ctx, PinKey(s.base, StreamEvents)); err != nil || pin == nil || len(checkErrs) != 0 {
		t.Fatalf("the opportunistic check after Log pinned %+v (%v, %v)", pin, err, checkErrs)
	}

	// Query: filter mode, paged by cursor, newest first.
	page, err := c.Query(ctx, QueryInput{ActorID: actor, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 || page.NextCursor == "" || page.Events[0].ID != ids[2] {
		t.Fatalf("first page: %d events, cursor %q", len(page.Events), page.NextCursor)
	}
	rest, err := c.Query(ctx, QueryInput{ActorID: actor, Limit: 2, Cursor: page.NextCursor})
	if err != nil || len(rest.Events) != 1 || rest.Events[0].ID != ids[0] {
		t.Fatalf("second page: %+v, %v", rest, err)
	}
	ev := rest.Events[0]
	if ev.Action != "doc.update" || ev.Actor.Display != "Alice" || ev.Target.ID != "d0" || ev.Metadata["i"] != float64(0) ||
		ev.Status != StatusSuccess || ev.Sequence == 0 || ev.Shredded() || ev.SigningKeyID != nil {
		t.Fatalf("stored event %+v", ev)
	}
	// Entity mode.
	ent, err := c.Query(ctx, QueryInput{EntityType: "user", EntityID: actor, Direction: "outgoing"})
	if err != nil || len(ent.Events) != 3 || ent.NextCursor != "" {
		t.Fatalf("entity mode: %+v, %v", ent, err)
	}

	// VerifyEvent: each event's leaf and commitment rebuilt, then proven in the pinned head.
	for _, e := range page.Events {
		v, err := c.VerifyEvent(ctx, &e)
		if err != nil {
			t.Fatalf("VerifyEvent %s: %v", e.ID, err)
		}
		if v.Proof.LeafIndex != e.Sequence-1 || v.Head.TreeSize < e.Sequence {
			t.Fatalf("VerifyEvent %s: %+v", e.ID, v)
		}
	}

	// CheckConsistency across growth, and GetConsistencyProof between the two heads.
	h1, err := c.CheckConsistency(ctx, StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Log(ctx, EventInput{Action: "doc.read", Actor: Entity{Type: "user", ID: actor}}); err != nil {
		t.Fatal(err)
	}
	h2, err := c.CheckConsistency(ctx, "")
	if err != nil || h2.TreeSize <= h1.TreeSize {
		t.Fatalf("second check: %+v, %v", h2, err)
	}
	cp, err := c.GetConsistencyProof(ctx, ConsistencyProofInput{OldSize: h1.TreeSize, NewSize: h2.TreeSize})
	if err != nil {
		t.Fatal(err)
	}
	path, err := parseHashes(cp.Proof)
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := tlog.ParseHash(h1.RootHash)
	r2, _ := tlog.ParseHash(h2.RootHash)
	if err := tlog.VerifyConsistency(h1.TreeSize, h2.TreeSize, r1, r2, path); err != nil {
		t.Fatalf("consistency proof %d→%d: %v", h1.TreeSize, h2.TreeSize, err)
	}

	// GetRoot and GetInclusionProof as served.
	root, err := c.GetRoot(ctx, "")
	if err != nil || root.STH.TreeSize < h2.TreeSize {
		t.Fatalf("GetRoot: %+v, %v", root, err)
	}
	pin, _ := store.Load(ctx, PinKey(s.base, StreamEvents))
	if root.ServicePublicKey != pin.ServicePublicKey {
		t.Fatal("GetRoot's key differs from the pinned key")
	}
	ip, err := c.GetInclusionProof(ctx, InclusionProofInput{EventID: ids[1], TreeSize: h2.TreeSize})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkInclusion(ip, h2); err != nil {
		t.Fatalf("inclusion proof of %s: %v", ids[1], err)
	}
	if _, err := c.VerifyInclusion(ctx, "", ids[2]); err != nil {
		t.Fatalf("VerifyInclusion: %v", err)
	}

	// Verify: signed receipts of both streams, under the pinned key.
	for _, stream := range []Stream{StreamEvents, StreamProjectAudit} {
		rec, err := c.Verify(ctx, stream)
		if err != nil {
			t.Fatalf("Verify %s: %v", stream, err)
		}
		if !rec.Valid || rec.Stream != stream.SignedName() || rec.ServicePublicKey != pin.ServicePublicKey {
			t.Fatalf("receipt %+v", rec)
		}
	}
	if _, err := c.CheckConsistency(ctx, StreamProjectAudit); err != nil {
		t.Fatalf("project-audit check: %v", err)
	}
	if _, err := c.GetAnchors(ctx, StreamEvents, 5); err != nil {
		t.Fatalf("GetAnchors: %v", err)
	}

	// Export: the JSON form is one decodable line per event; CSV starts with its header.
	lines := exportTo(t, c, filepath.Join(t.TempDir(), "export.ndjson"))
	for i, line := range lines {
		if _, err := tlog.DecodeExportLine(line); err != nil {
			t.Fatalf("export line %d: %v", i+1, err)
		}
	}
	if uint64(len(lines)) < h2.TreeSize {
		t.Fatalf("export has %d lines, tree has %d leaves", len(lines), h2.TreeSize)
	}
	resp, err := c.Export(ctx, ExportInput{ActorID: actor, Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		n++
	}
	resp.Body.Close()
	if n != 3 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv export: %d lines (want header + 2), %s", n, resp.Header.Get("Content-Type"))
	}

	// Errors: a schema failure carries its field errors; a bad parameter is a 400.
	_, err = c.Log(ctx, EventInput{Actor: Entity{Type: "user", ID: actor}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || len(ae.FieldErrors) == 0 || ae.FieldErrors[0].Field != "action" {
		t.Fatalf("schema failure: %v", err)
	}
	if _, err := c.Query(ctx, QueryInput{EntityType: "user", EntityID: actor, Direction: "sideways"}); !errors.As(err, &ae) || ae.Status != 400 {
		t.Fatalf("bad direction: %v", err)
	}
	if _, err := c.GetInclusionProof(ctx, InclusionProofInput{EventID: "evt_unknown"}); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("unknown event: %v", err)
	}
	bad, err := New(Config{APIKey: "stk_wrong", BaseURL: s.base, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.GetRoot(ctx, ""); !errors.As(err, &ae) || ae.Status != 401 || ae.Message != "Invalid API key" {
		t.Fatalf("wrong key: %v", err)
	}

	// A fresh client over the same pins (a restart) extends them.
	c2, err := New(Config{APIKey: s.apiKey, BaseURL: s.base, HeadStore: store, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if h3, err := c2.CheckConsistency(ctx, ""); err != nil || h3.TreeSize < h2.TreeSize {
		t.Fatalf("fresh client over persisted pins: %+v, %v", h3, err)
	}
}

// TestServiceSigned: a project with a registered signing key accepts the client's
// signed events, rejects unsigned ones, re-checks the signatures in its receipt, and
// the offline verifier confirms every signature from the export.
func TestServiceSigned(t *testing.T) {
	s := realService(t)
	ctx := context.Background()
	p, err := s.newSignedProject("signed " + t.Name())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{APIKey: p.apiKey, BaseURL: s.base, SigningKeyID: p.keyID, SigningPrivateKey: p.privateKey})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ids := map[string]bool{}
	for i, status := range []string{"", StatusDenied, "", StatusApproved} {
		res, err := c.Log(ctx, EventInput{Action: "payment.approve", Actor: Entity{Type: "user", ID: "bob"}, Status: status,
			Metadata: map[string]any{"amount": 12.5 * float64(i+1), "note": "<&> ünïcode"}, ToolName: "pay"})
		if err != nil {
			t.Fatalf("signed Log %d: %v", i, err)
		}
		ids[res.ID] = true
	}
	unsigned, err := New(Config{APIKey: p.apiKey, BaseURL: s.base, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = unsigned.Log(ctx, EventInput{Action: "x", Actor: Entity{Type: "user", ID: "bob"}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "signed") {
		t.Fatalf("unsigned event on a signing project: %v", err)
	}

	page, err := c.Query(ctx, QueryInput{})
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := tlog.ParsePublicKey(p.publicKey)
	statuses := map[string]int{}
	for _, e := range page.Events {
		if !ids[e.ID] || e.SigningKeyID == nil || *e.SigningKeyID != p.keyID || e.ClientSignature == nil {
			t.Fatalf("stored event %s: client id %v, key %v", e.ID, ids[e.ID], e.SigningKeyID)
		}
		ph, _ := tlog.ParseHash(e.PayloadHash)
		if err := tlog.VerifyEventSignature(pub, e.ID, ph, *e.ClientSignature); err != nil {
			t.Fatalf("signature of %s: %v", e.ID, err)
		}
		if _, err := c.VerifyEvent(ctx, &e); err != nil {
			t.Fatalf("VerifyEvent %s: %v", e.ID, err)
		}
		statuses[e.Status]++
	}
	if len(page.Events) != 4 || statuses[StatusSuccess] != 2 || statuses[StatusDenied] != 1 || statuses[StatusApproved] != 1 {
		t.Fatalf("%d events, statuses %v", len(page.Events), statuses)
	}
	rec, err := c.Verify(ctx, "")
	if err != nil || !rec.Valid || rec.CheckedCount != 4 {
		t.Fatalf("receipt %+v, %v", rec, err)
	}

	// Offline: rebuild the export against the head the client pinned, with the key.
	head, err := c.CheckConsistency(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "signed.ndjson")
	exportTo(t, c, file)
	size := strconv.FormatUint(head.TreeSize, 10)
	code, out := s.sealtrail(t, "verify", "full", "--export", file, "--root", head.RootHash, "--size", size, "--signing-key", p.publicKey)
	if code != 0 || !strings.Contains(out, "OK: 4 events") {
		t.Fatalf("sealtrail verify full: exit %d\n%s", code, out)
	}
	other, _, _ := tlog.GenerateKey()
	code, out = s.sealtrail(t, "verify", "full", "--export", file, "--signing-key", tlog.Hex(tlog.Hash(other)))
	if code != 1 || !strings.Contains(out, "invalid_client_signature") {
		t.Fatalf("verify full under another key: exit %d, want 1\n%s", code, out)
	}
}

// TestServiceHeadOfAnotherProject: against the real service, with real signatures, a
// head of another project (here served because the API key is that project's, as a
// service routing one project's requests to another would serve it) is a tamper
// against the pin, or against the configured project on first use; a configured project
// over a store that holds another project's pin is ErrProjectMismatch.
func TestServiceHeadOfAnotherProject(t *testing.T) {
	s := realService(t)
	ctx := context.Background()
	other, err := s.newSignedProject("another-" + strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		t.Fatal(err)
	}
	client := func(apiKey, projectID string, store HeadStore) *Client {
		t.Helper()
		c, err := New(Config{APIKey: apiKey, BaseURL: s.base, HeadStore: store, ProjectID: projectID, AutoVerify: new(false)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	wantTamper := func(c *Client) {
		t.Helper()
		_, err := c.CheckConsistency(ctx, StreamEvents)
		var te *TamperError
		if !errors.As(err, &te) || te.Reason != ReasonBadSTHSignature || te.CurrentSTH.ProjectID != other.id || c.Err() == nil {
			t.Fatalf("head of %s: %v, want bad_sth_signature", other.id, err)
		}
	}

	store := NewMemoryHeadStore()
	own, err := client(s.apiKey, "", store).CheckConsistency(ctx, StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	wantTamper(client(other.apiKey, "", store))
	wantTamper(client(other.apiKey, own.ProjectID, NewMemoryHeadStore()))
	mismatched := client(other.apiKey, other.id, store)
	if _, err := mismatched.CheckConsistency(ctx, StreamEvents); !errors.Is(err, ErrProjectMismatch) || mismatched.Err() != nil {
		t.Fatalf("configured project over another project's pin: %v", err)
	}
	if _, err := client(s.apiKey, own.ProjectID, store).CheckConsistency(ctx, StreamEvents); err != nil {
		t.Fatalf("configured project matching the pin: %v", err)
	}
}
